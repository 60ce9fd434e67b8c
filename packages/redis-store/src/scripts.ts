import { readdirSync, readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';

/**
 * The Lua scripts in ./lua, one command each, named `<name>-<numberOfKeys>.lua` (BullMQ's convention).
 * They are read once at start and registered with ioredis, which sends EVALSHA and falls back to EVAL
 * on NOSCRIPT (e.g. after a Redis restart), so the hot path sends the script body at most once.
 */
export interface ScriptCommands {
  reserve(meta: string, buyers: string, stream: string, userId: string, quantity: number, reservationId: string): Promise<[number, string | number]>;
  publishSale(meta: string, stream: string, ...args: (string | number)[]): Promise<number>;
  withdrawSale(meta: string, buyers: string, stream: string, generation: string): Promise<number>;
  setPaused(meta: string, paused: '0' | '1'): Promise<number>;
  deadLetter(stream: string, deadLetter: string, rejected: string, ...args: (string | number)[]): Promise<string>;
  rebuildSale(meta: string, buyers: string, stream: string, ...args: (string | number)[]): Promise<number>;
  trimAcknowledged(stream: string, group: string, keepFrom: string, keepSinceMs: string): Promise<number>;
}

export type ScriptedRedis = Redis & ScriptCommands;

const SCRIPT_DIR = new URL('./lua/', import.meta.url);
const SCRIPT_FILE = /^([a-z-]+)-(\d+)\.lua$/;

const scripts = readdirSync(SCRIPT_DIR).flatMap((file) => {
  const match = SCRIPT_FILE.exec(file);
  if (!match) return [];
  const name = match[1]!.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
  return [{ name, numberOfKeys: Number(match[2]), lua: readFileSync(new URL(file, SCRIPT_DIR), 'utf8') }];
});

/** Registers every script on this connection (idempotent). */
export function withScripts(redis: Redis): ScriptedRedis {
  for (const { name, numberOfKeys, lua } of scripts) {
    if (!(name in redis)) redis.defineCommand(name, { numberOfKeys, lua });
  }
  return redis as ScriptedRedis;
}
