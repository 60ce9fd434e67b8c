import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
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
 * checkout's node_modules copied beside it as hard links (the workspace packages in it are relative
 * symlinks, so they lead to the other revision's own packages) and the generated Prisma client copied.
 * Its migrations are its own (migrate() runs its migrator).
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
    const generated = 'packages/order-store/src/generated';
    cpSync(join(ROOT, generated), join(root, generated), { recursive: true });
  } catch (error) {
    remove();
    throw error;
  }
  return {
    root,
    commit,
    migrate: (databaseUrl) => void execFileSync(process.execPath, [...SOURCE_NODE_ARGS, 'packages/order-store/src/migrate-cli.ts'], { cwd: root, env: { ...process.env, DATABASE_URL: databaseUrl }, stdio: 'ignore' }),
    remove,
  };
}
