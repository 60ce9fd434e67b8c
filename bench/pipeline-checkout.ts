import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SOURCE_NODE_ARGS } from '@flashsale/harness';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** A checkout of another revision to run beside this one: its root, its commit, and its removal. */
export interface Checkout {
  root: string;
  commit: string;
  migrate(databaseUrl: string): void;
  remove(): void;
}

/**
 * `revision` checked out as a detached git worktree in a temporary directory, ready to run: this
 * checkout's node_modules copied beside it as hard links, its workspace links replaced by the other
 * revision's own packages (a package either side lacks is linked or left out accordingly), and its
 * Prisma client generated from its own schema. Its migrations are its own (migrate() runs its migrator).
 */
export function checkoutOf(revision: string): Checkout {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  const commit = git('rev-parse', '--short', `${revision}^{commit}`);
  const root = join(mkdtempSync(join(tmpdir(), 'bench-checkout-')), 'tree');
  git('worktree', 'add', '--detach', root, commit);
  const remove = () => {
    try {
      git('worktree', 'remove', '--force', root);
    } finally {
      rmSync(join(root, '..'), { recursive: true, force: true });
    }
  };
  try {
    execFileSync('cp', ['-al', join(ROOT, 'node_modules'), join(root, 'node_modules')]);
    linkWorkspaces(root);
    execFileSync(process.execPath, ['scripts/prisma-generate.mjs'], { cwd: root, stdio: 'ignore' });
  } catch (error) {
    remove();
    throw error;
  }
  return {
    root,
    commit,
    migrate: (databaseUrl) =>
      void execFileSync(process.execPath, [...SOURCE_NODE_ARGS, 'packages/order-store/src/migrate-cli.ts'], {
        cwd: root,
        env: { ...process.env, DATABASE_URL: databaseUrl },
        stdio: 'ignore',
      }),
    remove,
  };
}

/** node_modules/<name> for every workspace package of the tree at `root`, pointing at its own folder. */
function linkWorkspaces(root: string): void {
  const scope = join(root, 'node_modules', '@flashsale');
  rmSync(scope, { recursive: true, force: true });
  mkdirSync(scope, { recursive: true });
  for (const group of ['apps', 'packages']) {
    for (const folder of readdirSync(join(root, group))) {
      const manifest = join(root, group, folder, 'package.json');
      if (!existsSync(manifest)) continue;
      const name = (JSON.parse(readFileSync(manifest, 'utf8')) as { name: string }).name;
      symlinkSync(join('..', '..', group, folder), join(root, 'node_modules', name));
    }
  }
}
