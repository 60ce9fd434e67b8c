import { describe, expect, it } from 'vitest';
import { createConnection } from 'mariadb';
import { loadConfig } from '@flashsale/config';
import { checkConnectionBudget, connectionBudgetOf, judgeConnectionBudget, readServerConnections } from './connection-budget.ts';
import { poolConfigFromUrl } from './database-url.ts';
import { capturedLog } from '../../../test/support/logs.ts';

const DATABASE_URL = process.env.DATABASE_URL!;

describe('judgeConnectionBudget', () => {
  it('fits sixteen gateway processes of pool 4 beside a worker under the default max_connections', () => {
    expect(
      judgeConnectionBudget({ role: 'gateway', pool: 4, processes: 16, workerHeadroom: 10 }, { maxConnections: 151, inUse: 20 }),
    ).toEqual({
      fits: true,
      demand: 64,
      problems: [],
    });
  });

  it('refuses the incident: sixteen gateway processes of pool 10 take more than the 151 connections there are', () => {
    expect(
      judgeConnectionBudget({ role: 'gateway', pool: 10, processes: 16, workerHeadroom: 10 }, { maxConnections: 151, inUse: 3 }),
    ).toEqual({
      fits: false,
      demand: 160,
      problems: [
        '16 gateway processes x pool 10 = 160 connections, plus 10 for a worker, exceed max_connections 151',
        '16 gateway processes x pool 10 = 160 connections, but only 148 of max_connections 151 are free (3 in use)',
      ],
    });
  });

  it('refuses gateways that fit exactly but leave nothing to the workers', () => {
    expect(judgeConnectionBudget({ role: 'gateway', pool: 4, processes: 8, workerHeadroom: 10 }, { maxConnections: 32, inUse: 0 })).toEqual(
      {
        fits: false,
        demand: 32,
        problems: ['8 gateway processes x pool 4 = 32 connections, plus 10 for a worker, exceed max_connections 32'],
      },
    );
  });

  it('warns a worker that finds too few connections free, though its pool alone would fit', () => {
    expect(
      judgeConnectionBudget({ role: 'worker', pool: 10, processes: 1, workerHeadroom: 0 }, { maxConnections: 151, inUse: 145 }),
    ).toEqual({
      fits: false,
      demand: 10,
      problems: ['1 worker process x pool 10 = 10 connections, but only 6 of max_connections 151 are free (145 in use)'],
    });
  });

  it('counts no free connections, not fewer than none, when more are in use than max_connections (SUPER users get one more)', () => {
    expect(
      judgeConnectionBudget({ role: 'worker', pool: 10, processes: 1, workerHeadroom: 0 }, { maxConnections: 8, inUse: 9 }).problems,
    ).toEqual([
      '1 worker process x pool 10 = 10 connections exceed max_connections 8',
      '1 worker process x pool 10 = 10 connections, but only 0 of max_connections 8 are free (9 in use)',
    ]);
  });

  it('fits a pool that takes exactly what is free', () => {
    expect(
      judgeConnectionBudget({ role: 'reconciler', pool: 4, processes: 1, workerHeadroom: 10 }, { maxConnections: 20, inUse: 16 }),
    ).toEqual({ fits: true, demand: 4, problems: [] });
  });
});

describe('connectionBudgetOf', () => {
  it("takes each role's pool size (a gateway's with its dashboard pool), and a worker's pool as the room the others leave", () => {
    const config = loadConfig({
      GATEWAY_DB_POOL_SIZE: '3',
      DASHBOARD_DB_POOL_SIZE: '2',
      WORKER_DB_POOL_SIZE: '12',
      RECONCILER_DB_POOL_SIZE: '5',
    });
    expect([
      connectionBudgetOf(config, 'gateway', 8),
      connectionBudgetOf(config, 'worker'),
      connectionBudgetOf(config, 'reconciler'),
    ]).toEqual([
      { role: 'gateway', pool: 5, processes: 8, workerHeadroom: 12 },
      { role: 'worker', pool: 12, processes: 1, workerHeadroom: 0 },
      { role: 'reconciler', pool: 5, processes: 1, workerHeadroom: 12 },
    ]);
  });
});

describe('checkConnectionBudget (real MariaDB)', () => {
  it("reads the server's max_connections and the connections open on it, its own not counted", async () => {
    const { database: _database, ...server } = poolConfigFromUrl(DATABASE_URL);
    const connection = await createConnection(server);
    try {
      const [row] = await connection.query<{ max: number | bigint }[]>('SELECT @@GLOBAL.max_connections AS max');
      const read = await readServerConnections(DATABASE_URL);
      expect(read.maxConnections).toBe(Number(row!.max));
      // This test's connection at least; other test files share the server.
      expect(read.inUse).toBeGreaterThanOrEqual(1);
    } finally {
      await connection.end();
    }
  });

  it('logs an error with every number when the pools cannot fit', async () => {
    const { lines, logger } = capturedLog();
    const { maxConnections } = await readServerConnections(DATABASE_URL);
    const config = loadConfig({ DATABASE_URL, GATEWAY_DB_POOL_SIZE: String(maxConnections) });
    const verdict = await checkConnectionBudget(config, 'gateway', logger, { processes: 2 });
    expect(verdict.fits).toBe(false);
    expect(lines).toHaveLength(1);
    // The gateway's pool and its dashboard's (DASHBOARD_DB_POOL_SIZE, 2 by default).
    expect(lines[0]).toMatchObject({
      level: 50,
      role: 'gateway',
      pool: maxConnections + 2,
      processes: 2,
      workerHeadroom: 10,
      demand: 2 * (maxConnections + 2),
      maxConnections,
    });
    expect(lines[0]!.problems).toEqual(verdict.problems);
    expect(typeof lines[0]!.connectionsInUse).toBe('number');
  });

  it('keeps checking in the background while MySQL does not answer, without failing', async () => {
    const { lines, logger } = capturedLog();
    // Port 1: nothing listens there, the connection is refused at once.
    const config = loadConfig({ DATABASE_URL: 'mysql://root@127.0.0.1:1/flashsale' });
    const outcome = await Promise.race([
      checkConnectionBudget(config, 'worker', logger, { retryMs: 50 }).then(() => 'settled'),
      new Promise((resolve) => setTimeout(resolve, 1000, 'still checking')),
    ]);
    expect(outcome).toBe('still checking');
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [40, 'MySQL connection budget not checked yet: MySQL did not answer; checking again in the background'],
    ]);
  });
});
