import { existsSync, readdirSync, readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';

/**
 * The reserve script's reply: the remaining units, a bare integer, when it reserved (the one reply of the
 * hot path, the cheapest Redis can give); a pair of a refusal's ReserveCode and its value otherwise
 * (reserve-purchase.ts reads it).
 */
export type ReserveReply = number | [code: number, value: string | number];

/** The reserve script's arguments: how many keys, the keys its sale needs (reserve.lua), the buyer, quantity and reservation. */
export type ReserveArgs =
  | [numberOfKeys: 3, meta: string, buyers: string, stream: string, userId: string, quantity: number, reservationId: string]
  | [numberOfKeys: 4, meta: string, buyers: string, stream: string, closed: string, userId: string, quantity: number, reservationId: string]
  | [
      numberOfKeys: 6,
      meta: string,
      buyers: string,
      stream: string,
      closed: string,
      turns: string,
      showUp: string,
      userId: string,
      quantity: number,
      reservationId: string,
    ];

/**
 * The Lua scripts in ./lua, one command each, named `<name>-<numberOfKeys>.lua` (BullMQ's convention),
 * or `<name>.lua` for one whose caller passes the number of keys first (reserve.lua: as many as its sale
 * needs). They are read once at start and registered with ioredis, which sends EVALSHA and falls back to
 * EVAL on NOSCRIPT (e.g. after a Redis restart), so the hot path sends the script body at most once.
 */
export interface ScriptCommands {
  reserve(...args: ReserveArgs): Promise<ReserveReply>;
  joinQueue(
    meta: string,
    queue: string,
    door: string,
    turns: string,
    buyers: string,
    pow: string,
    userId: string,
    draw: string,
    provenScore: string,
    solution: string,
    solutionExpires: string,
  ): Promise<number[]>;
  admitQueue(
    meta: string,
    queue: string,
    turns: string,
    door: string,
    paid: string,
    showUp: string,
    rate: string,
    paused: string,
  ): Promise<(number | string)[]>;
  showUp(meta: string, turns: string, showUp: string, userId: string): Promise<(number | string)[]>;
  queuePlace(meta: string, queue: string, turns: string, door: string, userId: string): Promise<(number | string)[]>;
  recordPaid(meta: string, paid: string, reservationId: string, units: number): Promise<number>;
  publishSale(meta: string, stream: string, ...args: (string | number)[]): Promise<number>;
  withdrawSale(meta: string, buyers: string, stream: string, generation: string): Promise<number>;
  setPaused(meta: string, paused: '0' | '1', generation?: string): Promise<number>;
  applyControls(meta: string, version: number, stock: number, endsAt: number, operatorPaused: '0' | '1'): Promise<number>;
  deadLetter(stream: string, deadLetter: string, rejected: string, buyers: string, ...args: (string | number)[]): Promise<string>;
  rebuildSale(
    meta: string,
    buyers: string,
    stream: string,
    returned: string,
    door: string,
    nextBuyers: string,
    ...args: (string | number)[]
  ): Promise<number>;
  returnUnits(
    meta: string,
    buyers: string,
    returned: string,
    closed: string,
    generation: string,
    ...orders: (string | number)[]
  ): Promise<(number | string)[]>;
  restoreClosed(
    meta: string,
    closed: string,
    maxOrdersPerBuyer: number,
    cooldownSeconds: number,
    ...buyers: (string | number)[]
  ): Promise<number>;
  trimAcknowledged(stream: string, group: string, keepFrom: string, keepSinceMs: string, maxEntries: string): Promise<number>;
  receivePayment(payments: string, eventId: string, reservationId: string, amountCents: number): Promise<[number, number | string]>;
  heldPayments(payments: string): Promise<(number | string)[]>;
  snapshotSale(meta: string, buyers: string, stream: string, ...fields: string[]): Promise<unknown[]>;
  memoryLimit(meta: string): Promise<string[]>;
}

export type ScriptedRedis = Redis & ScriptCommands;

/** A script ready to register: its command name, how many of its arguments are keys, its whole text. */
export interface LoadedScript {
  name: string;
  /** Undefined when the caller passes it first. */
  numberOfKeys: number | undefined;
  lua: string;
}

const SCRIPT_FILE = /^([a-z]+(?:-[a-z]+)*)(?:-(\d+))?\.lua$/;
const INCLUDE = /^--@include "([^"]+)"[ \t]*$/;

/**
 * Reads every script of `dir` with its includes in place. The pieces several scripts share (a record's
 * format, creating a consumer group) live in `.lua` files of their own, under `includes/`, and a script
 * names each on a line `--@include "<path>"`, the path relative to the file that names it, written at the
 * start of the line even inside a block (its functions are then made only when the script runs that
 * block: reserve.lua). The line is replaced by the file (its own includes resolved first); a file already
 * inlined in this script is not inlined again, so its locals are declared once. A missing file, a cycle or a malformed `--@` line
 * fails the load: at start, not at the first call.
 *
 * An include's functions the script never calls are then left out (withoutUncalledFunctions): a script's
 * body runs on every call, and each `local function` in it makes a closure each time, whether it is called
 * or not (about 50 ns each; the reserve script's includes define ten it never calls).
 */
export function loadScripts(dir: URL): LoadedScript[] {
  return readdirSync(dir).flatMap((file) => {
    const match = SCRIPT_FILE.exec(file);
    if (!match) return [];
    const name = match[1]!.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
    const path = new URL(file, dir);
    return [
      {
        name,
        numberOfKeys: match[2] === undefined ? undefined : Number(match[2]),
        lua: withoutUncalledFunctions(withIncludes(path, new Set([path.href]), [path.href])),
      },
    ];
  });
}

function withIncludes(file: URL, inlined: Set<string>, chain: string[]): string {
  const lines = readFileSync(file, 'utf8').split('\n');
  return lines
    .map((line, index) => {
      if (!line.startsWith('--@')) {
        // Indented, Lua would read it as a comment and the script would call functions never defined.
        if (/^[ \t]+--@/.test(line))
          throw new Error(`${file.pathname}:${index + 1}: a directive starts its line, even inside a block: ${line.trim()}`);
        return line;
      }
      const path = INCLUDE.exec(line)?.[1];
      if (path === undefined) throw new Error(`${file.pathname}:${index + 1}: not an include directive: ${line}`);
      const included = new URL(path, file);
      if (chain.includes(included.href))
        throw new Error(`include cycle: ${[...chain, included.href].map((href) => new URL(href).pathname).join(' -> ')}`);
      if (inlined.has(included.href)) return '';
      if (!existsSync(included)) throw new Error(`${file.pathname}:${index + 1}: no such include: ${included.pathname}`);
      inlined.add(included.href);
      return withIncludes(included, inlined, [...chain, included.href]).trimEnd();
    })
    .join('\n');
}

const FUNCTION_START = /^local function ([A-Za-z_][A-Za-z0-9_]*)\(/;

/**
 * Removes each top-level function that nothing else in the script names, until none is left: one only an
 * uncalled function called goes too. A function is removed only in the shape every include writes it, a
 * `local function name(` line, its body indented, and `end` alone at the start of a line; any other
 * shape (a one-line function, code at the top level before an `end`) is kept as it is. A name that only a
 * comment mentions keeps its function: a closure too many, never a call to a missing one.
 */
export function withoutUncalledFunctions(lua: string): string {
  let lines = lua.split('\n');
  for (;;) {
    const block = uncalledFunction(lines);
    if (!block) return lines.join('\n');
    lines = [...lines.slice(0, block.from), ...lines.slice(block.to + 1)];
  }
}

/** The lines (inclusive) of the first top-level function nothing else in `lines` names, if any. */
function uncalledFunction(lines: string[]): { from: number; to: number } | undefined {
  for (let from = 0; from < lines.length; from++) {
    const name = FUNCTION_START.exec(lines[from]!)?.[1];
    // A function closed on its own line is kept: the lines after it are not its body.
    if (name === undefined || /\bend[ \t]*$/.test(lines[from]!)) continue;
    let to = from + 1;
    while (to < lines.length && lines[to] !== 'end' && (lines[to] === '' || /^[ \t]/.test(lines[to]!) || lines[to]!.startsWith('--'))) to++;
    if (lines[to] !== 'end') continue;
    const named = new RegExp(`\\b${name}\\b`);
    const elsewhere = [...lines.slice(0, from), ...lines.slice(to + 1)];
    if (!elsewhere.some((line) => named.test(line))) return { from, to };
  }
  return undefined;
}

const scripts = loadScripts(new URL('./lua/', import.meta.url));

/** Registers every script on this connection (idempotent). */
export function withScripts(redis: Redis): ScriptedRedis {
  for (const { name, numberOfKeys, lua } of scripts) {
    if (!(name in redis)) redis.defineCommand(name, numberOfKeys === undefined ? { lua } : { numberOfKeys, lua });
  }
  return redis as ScriptedRedis;
}
