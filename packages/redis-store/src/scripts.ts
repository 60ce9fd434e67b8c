import { existsSync, readdirSync, readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';

/**
 * The Lua scripts in ./lua, one command each, named `<name>-<numberOfKeys>.lua` (BullMQ's convention).
 * They are read once at start and registered with ioredis, which sends EVALSHA and falls back to EVAL
 * on NOSCRIPT (e.g. after a Redis restart), so the hot path sends the script body at most once.
 */
export interface ScriptCommands {
  reserve(meta: string, buyers: string, stream: string, turns: string, closed: string, userId: string, quantity: number, reservationId: string): Promise<[number, string | number]>;
  joinQueue(meta: string, queue: string, door: string, turns: string, buyers: string, userId: string, draw: string, provenScore: string): Promise<number[]>;
  admitQueue(meta: string, queue: string, turns: string, door: string, paid: string, rate: string, paused: string): Promise<(number | string)[]>;
  queuePlace(meta: string, queue: string, turns: string, door: string, userId: string): Promise<(number | string)[]>;
  recordPaid(meta: string, paid: string, reservationId: string, units: number): Promise<number>;
  publishSale(meta: string, stream: string, ...args: (string | number)[]): Promise<number>;
  withdrawSale(meta: string, buyers: string, stream: string, generation: string): Promise<number>;
  setPaused(meta: string, paused: '0' | '1'): Promise<number>;
  applyControls(meta: string, version: number, stock: number, endsAt: number, operatorPaused: '0' | '1'): Promise<number>;
  deadLetter(stream: string, deadLetter: string, rejected: string, buyers: string, ...args: (string | number)[]): Promise<string>;
  rebuildSale(meta: string, buyers: string, stream: string, returned: string, door: string, nextBuyers: string, ...args: (string | number)[]): Promise<number>;
  returnUnits(meta: string, buyers: string, returned: string, closed: string, generation: string, ...orders: (string | number)[]): Promise<(number | string)[]>;
  restoreClosed(meta: string, closed: string, maxOrdersPerBuyer: number, cooldownSeconds: number, ...buyers: (string | number)[]): Promise<number>;
  trimAcknowledged(stream: string, group: string, keepFrom: string, keepSinceMs: string, maxEntries: string): Promise<number>;
  receivePayment(payments: string, eventId: string, reservationId: string, amountCents: number): Promise<[number, number | string]>;
  heldPayments(payments: string): Promise<(number | string)[]>;
}

export type ScriptedRedis = Redis & ScriptCommands;

/** A script ready to register: its command name, how many of its arguments are keys, its whole text. */
export interface LoadedScript {
  name: string;
  numberOfKeys: number;
  lua: string;
}

const SCRIPT_FILE = /^([a-z-]+)-(\d+)\.lua$/;
const INCLUDE = /^--@include "([^"]+)"[ \t]*$/;

/**
 * Reads every script of `dir` with its includes in place. The pieces several scripts share (a record's
 * format, creating a consumer group) live in `.lua` files of their own, under `includes/`, and a script
 * names each on a line `--@include "<path>"`, the path relative to the file that names it. The line is
 * replaced by the file (its own includes resolved first); a file already inlined in this script is not
 * inlined again, so its locals are declared once. A missing file, a cycle or a malformed `--@` line
 * fails the load: at start, not at the first call.
 */
export function loadScripts(dir: URL): LoadedScript[] {
  return readdirSync(dir).flatMap((file) => {
    const match = SCRIPT_FILE.exec(file);
    if (!match) return [];
    const name = match[1]!.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
    const path = new URL(file, dir);
    return [{ name, numberOfKeys: Number(match[2]), lua: withIncludes(path, new Set([path.href]), [path.href]) }];
  });
}

function withIncludes(file: URL, inlined: Set<string>, chain: string[]): string {
  const lines = readFileSync(file, 'utf8').split('\n');
  return lines
    .map((line, index) => {
      if (!line.startsWith('--@')) return line;
      const path = INCLUDE.exec(line)?.[1];
      if (path === undefined) throw new Error(`${file.pathname}:${index + 1}: not an include directive: ${line}`);
      const included = new URL(path, file);
      if (chain.includes(included.href)) throw new Error(`include cycle: ${[...chain, included.href].map((href) => new URL(href).pathname).join(' -> ')}`);
      if (inlined.has(included.href)) return '';
      if (!existsSync(included)) throw new Error(`${file.pathname}:${index + 1}: no such include: ${included.pathname}`);
      inlined.add(included.href);
      return withIncludes(included, inlined, [...chain, included.href]).trimEnd();
    })
    .join('\n');
}

const scripts = loadScripts(new URL('./lua/', import.meta.url));

/** Registers every script on this connection (idempotent). */
export function withScripts(redis: Redis): ScriptedRedis {
  for (const { name, numberOfKeys, lua } of scripts) {
    if (!(name in redis)) redis.defineCommand(name, { numberOfKeys, lua });
  }
  return redis as ScriptedRedis;
}
