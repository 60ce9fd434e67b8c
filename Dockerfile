# syntax=docker/dockerfile:1
# One image for every role of the system; its command picks the role:
#   gateway (the default) | worker | reconciler | migrate | reconcile --sale <id>
# It runs the JavaScript that `npm run build` emits, with plain node (scripts/start.mjs), as the
# unprivileged `node` user. No tsx, no TypeScript, no Prisma CLI at run time.
#   docker build -t flashsale .
#   docker run --rm -e DATABASE_URL=... -e AUTH_SECRET=... -e ADMIN_TOKEN=... flashsale migrate
# Built and run on the project's machines with podman (no Docker engine there): `npm run image:build`, then
# `npm run image:check` runs every role and the compose stack, in CI too (docs/operations.md, "Deploying").

ARG NODE_IMAGE=node:24-bookworm-slim

# Every workspace manifest, so the dependency layers are rebuilt only when one of them changes.
FROM ${NODE_IMAGE} AS manifests
WORKDIR /app
COPY package.json package-lock.json ./
COPY apps/gateway/package.json apps/gateway/
COPY apps/worker/package.json apps/worker/
COPY apps/reconciler/package.json apps/reconciler/
COPY packages/bootstrap/package.json packages/bootstrap/
COPY packages/config/package.json packages/config/
COPY packages/runtime/package.json packages/runtime/
COPY packages/domain/package.json packages/domain/
COPY packages/redis-store/package.json packages/redis-store/
COPY packages/order-store/package.json packages/order-store/
COPY packages/jobs/package.json packages/jobs/
COPY packages/sales/package.json packages/sales/
COPY packages/harness/package.json packages/harness/

# Build: every dependency (the postinstall generates the Prisma client from the schema), then
# `npm run build` (tsc -b per workspace, the Lua scripts copied beside redis-store's JavaScript, each
# app's entry bundled into dist/bundle/main.js by scripts/bundle.mjs, which start.mjs runs).
FROM manifests AS build
ENV TURBO_TELEMETRY_DISABLED=1
COPY prisma prisma
COPY prisma.config.ts ./
COPY scripts/prisma-generate.mjs scripts/
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build \
 && mkdir -p /out \
 && for dir in apps/gateway apps/worker apps/reconciler packages/bootstrap packages/config packages/runtime packages/domain packages/redis-store packages/order-store packages/jobs packages/sales; do \
      mkdir -p "/out/$dir" && cp -R "$dir/package.json" "$dir/dist" "/out/$dir/"; \
    done \
 && find /out -name '*.d.ts' -delete -o -name '.tsbuildinfo' -delete \
 && mkdir -p /out/prisma /out/scripts \
 && cp -R prisma/migrations /out/prisma/ \
 && cp scripts/start.mjs /out/scripts/ \
 && mkdir -p /out/docs && cp docs/openapi.yaml /out/docs/ \
 && cp -R apps/gateway/public /out/apps/gateway/

# What the processes import at run time and nothing else: no devDependencies (TypeScript, tsx, turbo,
# the Prisma CLI), no optional ones (the Node 24 binary the repository brings for older machines; the
# native msgpack accelerator, whose JavaScript fallback BullMQ uses instead). No install scripts: the
# Prisma client is already compiled into order-store's dist/.
FROM manifests AS runtime-deps
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund

FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
# Owned by root, read-only to the `node` user the processes run as.
COPY --from=runtime-deps /app/node_modules node_modules
COPY --from=build /out ./
USER node
# gateway PORT and METRICS_PORT, reconciler and worker health/metrics ports (the defaults).
EXPOSE 3000 3003 3001 3002
ENTRYPOINT ["node", "scripts/start.mjs"]
CMD ["gateway"]
