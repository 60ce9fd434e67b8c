import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnection } from 'mariadb';
import { startRedisServer, testDatabaseName, type RedisServer } from '@flashsale/harness';
import { poolConfigFromUrl } from '@flashsale/order-store';
import { runScript } from '../support/run-process.ts';

// What a user runs: `npm run demo -- --queue` as a child process, on a redis-server and a database of
// this test's own (the demo makes `<DATABASE_URL's>_demo` and keeps it for inspection: dropped here).

let server: RedisServer;
const databaseUrl = new URL(process.env.DATABASE_URL ?? 'mysql://root@127.0.0.1:3306/flashsale_test');
databaseUrl.pathname = `/${testDatabaseName('demoq')}`;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server?.stop();
  const { database, ...connection } = poolConfigFromUrl(databaseUrl.toString());
  const admin = await createConnection(connection);
  await admin.query(`DROP DATABASE IF EXISTS \`${database}_demo\``);
  await admin.end();
});

describe('npm run demo -- --queue', () => {
  it('tells a queued sale from the pre-queue to sold out: joins with a solved proof of work, the draw, admission within the stock, an abandoned turn, a returned unit to the next in line, sold_out to the rest, the ledger exact', async () => {
    const run = await runScript('scripts/demo.ts', { REDIS_URL: server.url, DATABASE_URL: databaseUrl.toString() }, ['--queue']);
    const out = run.stdout;

    expect(run.code, `${out.slice(-3000)}\n${run.stderr.slice(-2000)}`).toBe(0);
    expect(out).toContain('== a queued sale: 8 units, 1 per buyer, behind a waiting room that admits 4 a second');
    expect(out).toMatch(/its page for buyers: http:\/\/127\.0\.0\.1:\d+\/s\/\d+ \(outside production it offers a development sign-in\)\n/);
    // The sale asks a proof of work at join: every buyer solved one (the demo's joins would be 403 without).
    expect(out).toMatch(/each join solved a challenge first \(ALTCHA, SHA-256, maxnumber 100000\): [\d.]+ ms of CPU per join on average\n/);
    expect(out).toMatch(/early-1 joined first: "waiting", no place yet/);
    expect(out).toContain('early-1 tries to buy anyway: 403 SALE_NOT_STARTED');
    expect(out).toMatch(/places by join order: early-1 #\d+, early-2 #\d+/);
    // Behind the 24 of the pre-queue, in arrival order.
    expect(out).toMatch(/joined after the start: late-1 #25, late-2 #26, late-3 #27\n/);
    expect(out).toMatch(/is admitted and walks away: the turn runs out in 3 s/);
    expect(out).toMatch(/'s turn ended unused \(abandoned\): the frontier moved on/);
    expect(out.match(/admitted, bought 1 unit \(202\)/g)).toHaveLength(9);
    expect(out).toMatch(/cancels: 200 cancelled/);
    expect(out).toMatch(/the returned unit went to (\S+), who was next in line \(\1\): yes/);
    expect(out).toMatch(/payment events: 8 paid \(HTTP 200\)/);
    expect(out).toMatch(/the \d+ buyers still waiting are told at once: sold_out\n/);
    expect(out).toMatch(/paid \+ remaining \(= stock\?\)\s*│ '8 \/ 8'/);
    expect(out).toContain('The door held');
    expect(out).toContain('exit codes: 0, 0, 0, 0');
  });
});
