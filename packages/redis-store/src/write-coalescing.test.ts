import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedisCluster, startRedisServer, type RedisCluster, type RedisServer } from '@flashsale/harness';
import { createRedis } from './redis-client.ts';
import { MAX_COMMANDS_PER_WRITE } from './write-coalescing.ts';

// What the connection's socket is asked to send: each call of its _write or _writev is one send (a
// write or writev system call when the kernel takes it, as it does these few kilobytes).
function countSends(redis: Redis): { sends: number; chunks: number } {
  const counts = { sends: 0, chunks: 0 };
  const stream = redis.stream as unknown as {
    _write: (...args: unknown[]) => void;
    _writev: (chunks: unknown[], ...rest: unknown[]) => void;
  };
  const write = stream._write.bind(stream);
  const writev = stream._writev.bind(stream);
  stream._write = (...args) => {
    counts.sends += 1;
    counts.chunks += 1;
    write(...args);
  };
  stream._writev = (chunks, ...rest) => {
    counts.sends += 1;
    counts.chunks += chunks.length;
    writev(chunks, ...rest);
  };
  return counts;
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('the commands of one turn of the event loop leave in one write', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server.stop();
  });

  it('sends 200 commands issued together in a writev per MAX_COMMANDS_PER_WRITE, answered each in order; a later command in a write of its own, within its turn', async () => {
    const redis = createRedis(server.url);
    try {
      await redis.ping();
      const counts = countSends(redis);
      const replies = Promise.all(
        Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? redis.set(`c${i}`, String(i)) : redis.get(`c${i - 1}`))),
      );
      // Only full batches have left yet: the rest waits for the turn's end.
      const full = Math.floor(200 / MAX_COMMANDS_PER_WRITE);
      expect(counts).toEqual({ sends: full, chunks: full * MAX_COMMANDS_PER_WRITE });
      expect(await replies).toEqual(Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? 'OK' : String(i - 1))));
      const writes = Math.ceil(200 / MAX_COMMANDS_PER_WRITE);
      expect(counts).toEqual({ sends: writes, chunks: 200 });

      // A lone command leaves at the end of the turn it was issued in (before a setImmediate queued after it).
      const lone = redis.get('c0');
      await nextTurn();
      expect(counts).toEqual({ sends: writes + 1, chunks: 201 });
      expect(await lone).toBe('0');
    } finally {
      redis.disconnect();
    }
  });

  it('takes what ioredis sends apart from its socket: commands issued before the connection is ready, a MULTI and a pipeline in the same turn', async () => {
    const redis = createRedis(server.url);
    try {
      // Issued at once: the first goes to the offline queue, the rest after it, all answered in order.
      const [set, multi, piped, got] = await Promise.all([
        redis.set('m1', 'a'),
        redis.multi().incr('m2').incr('m2').exec(),
        redis.pipeline().set('m3', 'b').get('m3').exec(),
        redis.get('m1'),
      ]);
      expect({ set, multi, piped, got }).toEqual({
        set: 'OK',
        multi: [
          [null, 1],
          [null, 2],
        ],
        piped: [
          [null, 'OK'],
          [null, 'b'],
        ],
        got: 'a',
      });
    } finally {
      redis.disconnect();
    }
  });

  it('is what makes the difference: a plain ioredis connection sends the same 200 commands in many more writes', async () => {
    const redis = new Redis(server.url);
    try {
      await redis.ping();
      const counts = countSends(redis);
      await Promise.all(Array.from({ length: 200 }, (_, i) => redis.set(`p${i}`, String(i))));
      expect(counts.chunks).toBe(200);
      expect(counts.sends).toBeGreaterThan(Math.ceil(200 / MAX_COMMANDS_PER_WRITE));
    } finally {
      redis.disconnect();
    }
  });
});

describe('on a Redis Cluster, each node connection', () => {
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3 });
  });
  afterAll(async () => {
    await cluster.stop();
  });

  it('sends the commands of one turn for its slots in a writev per MAX_COMMANDS_PER_WRITE, each answered', async () => {
    const redis = createRedis({ clusterNodes: cluster.nodes.map(({ host, port }) => ({ host, port })) });
    try {
      // One hash tag: every key in one slot, so on one master, whose connection is found by asking.
      await redis.set('{tag}warm', '1');
      const slot = Number(await redis.call('CLUSTER', 'KEYSLOT', '{tag}'));
      // ioredis's Cluster: the slot map (node keys by slot) and the pool of node connections.
      const internals = redis as unknown as { slots: string[][]; connectionPool: { getInstanceByKey(key: string): Redis } };
      const master = internals.connectionPool.getInstanceByKey(internals.slots[slot]![0]!);
      const counts = countSends(master);
      const replies = await Promise.all(Array.from({ length: 64 }, (_, i) => redis.incr(`{tag}n${i % 4}`)));
      expect(replies.slice(-4)).toEqual([16, 16, 16, 16]);
      expect(counts).toEqual({ sends: Math.ceil(64 / MAX_COMMANDS_PER_WRITE), chunks: 64 });
    } finally {
      redis.disconnect();
    }
  });
});
