import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// A real process: what is at stake is what reaches its stdout before process.exit ends it. Its one libuv
// thread (UV_THREADPOOL_SIZE=1) is kept busy by a key derivation of about a second, as a busy process's
// file system, DNS or crypto work would keep it: a line written through that pool would wait behind it,
// and the process exits long before.
const PROGRAM = `
import { pbkdf2 } from 'node:crypto';
import { createLogger } from '@flashsale/runtime';
const logger = createLogger('logger-test', 'info', { stream: Number(process.env.STREAM) });
logger.info('ready');
setTimeout(() => {
  pbkdf2('secret', 'salt', 2_000_000, 32, 'sha256', () => undefined);
  logger.info('stopping');
  logger.info('stopped');
  logger.fatal('last words');
  process.exit(1);
}, 100);
`;
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

async function linesOf(stream: 1 | 2): Promise<{ code: number | null; messages: unknown[] }> {
  const child = spawn(process.execPath, ['--conditions=@flashsale/source', '--import', 'tsx', '--input-type=module', '-e', PROGRAM], {
    cwd: ROOT,
    env: { ...process.env, UV_THREADPOOL_SIZE: '1', STREAM: String(stream) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  (stream === 1 ? child.stdout : child.stderr).setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  const code = await new Promise<number | null>((resolve) => child.once('close', (exitCode) => resolve(exitCode)));
  return {
    code,
    messages: out
      .trim()
      .split('\n')
      .map((text) => (JSON.parse(text) as { msg: unknown }).msg),
  };
}

describe('the log', () => {
  it.each([1, 2] as const)('has every line logged before process.exit, in order, however busy the process (fd %i)', async (stream) => {
    const exited = await linesOf(stream);

    expect(exited.code).toBe(1);
    expect(exited.messages).toEqual(['ready', 'stopping', 'stopped', 'last words']);
  });
});
