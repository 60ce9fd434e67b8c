// Starts one role of the built system (`npm run build` first), in this process: the image's entry point
// and the `npm start -- <role>` / `npm run start:<role>` scripts. Plain JavaScript on plain Node:
// production runs the JavaScript that `npm run build` emitted, never TypeScript through tsx.
import { URL, fileURLToPath } from 'node:url';

const ROLES = {
  gateway: '../apps/gateway/dist/main.js',
  worker: '../apps/worker/dist/main.js',
  reconciler: '../apps/reconciler/dist/main.js',
  migrate: '../packages/order-store/dist/migrate-cli.js',
  // The runbook's one-off reconciliation: `start.mjs reconcile --sale <id>`.
  reconcile: '../apps/reconciler/dist/reconcile-cli.js',
};

const role = process.argv[2];
if (!role || !Object.hasOwn(ROLES, role)) {
  console.error(`usage: node scripts/start.mjs <${Object.keys(ROLES).join('|')}> [arguments]`);
  process.exit(2);
}
const entry = new URL(ROLES[role], import.meta.url);
// As if Node had been started on the entry itself: the reconcile CLI parses the arguments after the role,
// and a gateway's cluster (GATEWAY_WORKERS > 1) forks process.argv[1] with the arguments after it.
process.argv.splice(1, 2, fileURLToPath(entry));
await import(entry.href);
