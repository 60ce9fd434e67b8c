// Starts one role of the built system (`npm run build` first), in this process: the image's entry point
// and the `npm start -- <role>` / `npm run start:<role>` scripts. Plain JavaScript on plain Node:
// production runs the JavaScript that `npm run build` emitted, never TypeScript through tsx.
import { existsSync } from 'node:fs';
import { URL, fileURLToPath } from 'node:url';

// The three processes run their bundle (scripts/bundle.mjs: one file each, read and compiled once, the
// first thing between a spawn and a ready process); the one-off commands run tsc's output as it is.
const ROLES = {
  gateway: '../apps/gateway/dist/bundle/main.js',
  worker: '../apps/worker/dist/bundle/main.js',
  reconciler: '../apps/reconciler/dist/bundle/main.js',
  migrate: '../packages/order-store/dist/migrate-cli.js',
  // The runbook's one-off reconciliation: `start.mjs reconcile --sale <id>`.
  reconcile: '../apps/reconciler/dist/reconcile-cli.js',
};

// The command line past the role is the role's own, read by its entry point with the same parser as its
// `npm run <role>` twin (@flashsale/config's parseCommandLine): `--help` there prints the role's usage.
// Only what comes before it is read here, with no import of the build, so that this usage and a
// mistyped role answer before anything is built.
const USAGE = `usage: npm start -- <${Object.keys(ROLES).join('|')}> [the role's options]
       npm run start:<gateway|worker|reconciler|migrate> [-- --help]

Runs one role of the built system (npm run build first) with plain node: what the image runs.
  gateway | worker | reconciler   the processes, as npm run gateway, worker, reconciler
  migrate                         applies the migrations, as npm run db:migrate
  reconcile --sale <id>           reconciles one sale now, as npm run reconcile
Each role takes --help for its own usage.`;

const [role] = process.argv.slice(2);
if (role === '--help' || role === '-h') {
  console.log(USAGE);
  process.exit(0);
}
if (!role || !Object.hasOwn(ROLES, role)) {
  console.error(`${role === undefined ? 'no role given' : `unknown role: ${role}`}\n${USAGE}`);
  process.exit(2);
}
const entry = new URL(ROLES[role], import.meta.url);
if (!existsSync(entry)) {
  console.error(`${fileURLToPath(entry)} is missing: build first (npm run build)`);
  process.exit(1);
}
// As if Node had been started on the entry itself: the role parses the arguments after the role, and a
// gateway's cluster (GATEWAY_WORKERS > 1) forks process.argv[1] with the arguments after it.
process.argv.splice(1, 2, fileURLToPath(entry));
await import(entry.href);
