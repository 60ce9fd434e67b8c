import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { SOURCE_NODE_ARGS } from '@flashsale/harness';
import { createBuyerAuthenticator } from '../../apps/gateway/src/auth.ts';

const SECRET = 'token-command-test-secret-0123456789abcdef';

/** `npm run token -- <args>` as npm runs it (without npm's banner), with AUTH_SECRET set. */
async function token(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [...SOURCE_NODE_ARGS, 'scripts/token.ts', ...args], {
      env: { ...process.env, AUTH_SECRET: SECRET, NODE_ENV: 'development' },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}

const claimsOf = (jwt: string) =>
  JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8')) as { sub: string; iat: number; exp: number };

describe('npm run token -- <buyer>', () => {
  it('prints only a token the gateway takes as that buyer, signed with AUTH_SECRET, valid for an hour', async () => {
    const { code, stdout } = await token(['alice']);

    expect(code).toBe(0);
    expect(stdout).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+\n$/);
    const jwt = stdout.trim();
    expect(createBuyerAuthenticator(SECRET)(`Bearer ${jwt}`)).toBe('alice');
    const { iat, exp } = claimsOf(jwt);
    expect(exp - iat).toBe(3600);
  });

  it('sets the expiry from --expires-in', async () => {
    const { stdout } = await token(['bob', '--expires-in', '7d']);

    const { iat, exp } = claimsOf(stdout.trim());
    expect(exp - iat).toBe(7 * 86_400);
  });

  it.each([
    ['no buyer', []],
    ['a buyer id the gateway refuses', ['x'.repeat(65)]],
    ['a duration it cannot read', ['carol', '--expires-in', 'soon']],
  ])('exits 2 with the usage for %s, printing no token', async (_what, args) => {
    const { code, stdout, stderr } = await token(args);

    expect({ code, stdout }).toEqual({ code: 2, stdout: '' });
    expect(stderr).toContain('usage: npm run --silent token -- <buyer>');
  });
});
