import { execFileSync } from 'node:child_process';

/**
 * What a measurement ran on, for its record: the short HEAD, with `+changes` when tracked files differ
 * from it, and which ones. `unknown` outside a git checkout.
 */
export function gitRevision(): { commit: string; changes: string[] } {
  const git = (args: string[]) => {
    try {
      return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    } catch {
      return '';
    }
  };
  const head = git(['rev-parse', '--short', 'HEAD']).trim() || 'unknown';
  const changes = git(['status', '--porcelain', '--untracked-files=no'])
    .split('\n')
    .filter(Boolean)
    .map((line) => line.slice(3));
  return { commit: changes.length > 0 ? `${head}+changes` : head, changes };
}
