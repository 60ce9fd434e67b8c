import { doorGuardsOff, type DoorTerms, type SaleDefinition } from '@flashsale/domain';
import type { ScriptedRedis } from './scripts.ts';
import type { SaleRef } from './store-ref.ts';
import { isClusterClient } from './redis-target.ts';

/**
 * A sale's meta hash (`meta` in keys.ts; its fields are listed in lua/includes/sale-meta.lua, through which
 * the Lua scripts write and read it): TypeScript reads it here; Redis's clock, which its times are on, is
 * read here too.
 */

/** A sale as Redis holds it: its definition plus the live counters. */
export interface SaleState extends SaleDefinition {
  remaining: number;
  /** The reconciler's pause (intake stopped while a reconciliation drains and rebuilds). */
  paused: boolean;
  /** Marker written when this Redis state was created; a different one means it was rebuilt. */
  generation: string;
  /** The operator's pause, apart from the reconciler's: either refuses purchases. */
  operatorPaused: boolean;
  /** Version of the operator's controls this state holds (MySQL's sales.controls_version when in step). */
  controlsVersion: number;
}

export async function readSaleState({ redis, keys, saleId }: SaleRef): Promise<SaleState | null> {
  const meta = await redis.hgetall(keys.meta);
  if (meta.stock === undefined) return null;
  return {
    id: saleId,
    name: meta.name ?? '',
    stock: Number(meta.stock),
    remaining: Number(meta.remaining),
    perUserLimit: Number(meta.limit),
    startsAt: Number(meta.starts),
    endsAt: Number(meta.ends),
    paused: meta.paused === '1',
    generation: meta.gen ?? '',
    operatorPaused: meta.op_paused === '1',
    controlsVersion: Number(meta.ctl ?? 0),
    ...(meta.rb_max !== undefined && { rebuyRule: { maxOrdersPerBuyer: Number(meta.rb_max), rebuyCooldownSeconds: Number(meta.rb_cool) } }),
    ...(meta.adm === '1' && {
      admission: {
        mode: 'queue' as const,
        preQueueSeconds: Number(meta.q_pre),
        admitPerSecond: Number(meta.q_rate),
        admissionTtlSeconds: Number(meta.q_ttl),
        noShowFactor: Number(meta.q_factor),
        paused: meta.q_paused === '1',
        ...doorGuardsOf(meta),
      },
    }),
  };
}

/** Whether the sale sits behind a door: one HGET of its meta (an open sale's payment pays only this for the door). */
export async function isQueued({ redis, keys }: SaleRef): Promise<boolean> {
  return (await redis.hget(keys.meta, 'adm')) === '1';
}

/** A queued sale's guards as its meta holds them (none where the meta lacks their fields: door-terms.lua). */
export function doorGuardsOf(
  meta: Record<string, string | undefined>,
): Pick<DoorTerms, 'showUpSeconds' | 'challenge' | 'challengeMaxNumber' | 'requireClaim' | 'maxQueueSize'> {
  const off = doorGuardsOff(Number(meta.q_ttl));
  return {
    showUpSeconds: meta.q_show ? Number(meta.q_show) : off.showUpSeconds,
    challenge: meta.q_pow === 'pow' || meta.q_pow === 'auto' ? meta.q_pow : 'off',
    challengeMaxNumber: meta.q_pow_max ? Number(meta.q_pow_max) : off.challengeMaxNumber,
    requireClaim: meta.q_claim ? meta.q_claim : null,
    maxQueueSize: meta.q_max ? Number(meta.q_max) : null,
  };
}

/** The counters the reconciler reads in one MULTI with other keys: HMGET these fields, parse with saleCountersOf. */
/**
 * A sale's terms in the order publish-sale-2.lua and rebuild-sale-6.lua take them (ARGV name, stock,
 * limit, starts, ends): the one place that order is written on this side.
 */
export function saleTermsArgs(sale: SaleDefinition): [name: string, stock: number, limit: number, starts: number, ends: number] {
  return [sale.name, sale.stock, sale.perUserLimit, sale.startsAt, sale.endsAt];
}

/**
 * The door's terms in the order publish-sale-2.lua (ARGV[9..14]) and rebuild-sale-6.lua (ARGV[11..16])
 * take them (lua/includes/door-terms.lua); an open sale's mode is '' and the rest unused.
 */
export function doorTermsArgs(admission: DoorTerms | undefined): (string | number)[] {
  if (!admission) return ['', '', '', '', '', ''];
  return [
    'queue',
    admission.preQueueSeconds,
    admission.admitPerSecond,
    admission.admissionTtlSeconds,
    admission.noShowFactor,
    admission.paused ? '1' : '0',
  ];
}

/**
 * The door's guards in the order publish-sale-2.lua (ARGV[17..21]) and rebuild-sale-6.lua (ARGV[18..22])
 * take them (lua/includes/door-terms.lua): show-up s, challenge, its maxnumber, claim ('' none), cap ('' none).
 */
export function doorGuardArgs(admission: DoorTerms | undefined): (string | number)[] {
  if (!admission) return ['', '', '', '', ''];
  return [
    admission.showUpSeconds,
    admission.challenge,
    admission.challengeMaxNumber,
    admission.requireClaim ?? '',
    admission.maxQueueSize ?? '',
  ];
}

export const SALE_COUNTER_FIELDS = ['stock', 'remaining', 'gen', 'paused', 'ret_units', 'ret_res', 'ctl', 'op_paused'] as const;

export interface SaleCounters {
  stock: number;
  remaining: number;
  generation: string;
  /** The reconciler's pause only: the operator's is not the reconciler's business. */
  paused: boolean;
  /** Units given back by closed orders in this generation (return-units-4.lua). */
  returnedUnits: number;
  /** Buyer records those returns removed in this generation. */
  returnedReservations: number;
  /** Version of the operator's controls applied (`ctl`): behind MySQL's, the state missed one. */
  controlsVersion: number;
  /** The operator's pause (`op_paused`), apart from the reconciler's own (`paused`). */
  operatorPaused: boolean;
}

/** The reply of `HMGET <meta> ...SALE_COUNTER_FIELDS`; null when the sale is not in Redis. */
export function saleCountersOf(reply: unknown): SaleCounters | null {
  const [stock, remaining, generation, paused, returnedUnits, returnedReservations, controlsVersion, operatorPaused] = reply as (
    string | null
  )[];
  if (stock === null || stock === undefined) return null;
  return {
    stock: Number(stock),
    remaining: Number(remaining ?? 0),
    generation: generation ?? '',
    paused: paused === '1',
    returnedUnits: Number(returnedUnits ?? 0),
    returnedReservations: Number(returnedReservations ?? 0),
    controlsVersion: Number(controlsVersion ?? 0),
    operatorPaused: operatorPaused === '1',
  };
}

/** The generation of the sale's Redis state (its meta's `gen`), or null when Redis does not hold the sale. */
export async function readGeneration({ redis, keys }: SaleRef): Promise<string | null> {
  return redis.hget(keys.meta, 'gen');
}

/**
 * Milliseconds on Redis's clock: the one clock every process agrees on for sale windows and fences.
 * On a Redis Cluster each master has its own clock, and a sale's window is judged by its scripts on its
 * master's: given one of the sale's keys, the time is read there (TIME inside a script, which the client
 * routes by the key), so a fence or a status is judged on the clock the sale's scripts read. On one
 * server, or without a key, plain TIME.
 */
export async function redisNow(redis: ScriptedRedis, saleKey?: string): Promise<number> {
  if (saleKey !== undefined && isClusterClient(redis)) return redisTimeMs(await redis.eval("return redis.call('TIME')", 1, saleKey));
  return redisTimeMs(await redis.time());
}

/** A TIME reply ([seconds, microseconds]) in epoch ms, as the scripts compute it (redis_now_ms). */
export function redisTimeMs(reply: unknown): number {
  const [seconds, micros] = reply as [string | number, string | number];
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}
