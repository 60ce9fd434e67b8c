import express, { Router } from 'express';
import { z } from 'zod';
import {
  DOOR_TERMS_DEFAULTS,
  DOOR_TERMS_LIMITS,
  AppError,
  CLAIM_NAME,
  DOOR_CHALLENGES,
  MAX_PER_USER_LIMIT,
  MAX_STOCK,
  REBUY_RULE_LIMITS,
  REGISTERED_CLAIMS,
  SALE_TIME_RANGE,
  saleIdOfReservation,
  type DoorTerms,
} from '@flashsale/domain';
import { LOSSES_PAGE, ReconcileUnfinished } from '@flashsale/sales';
import type { GatewayDeps } from '../deps.ts';
import { admissionView, saleView } from './sale-view.ts';
import { creationKeyOf } from './creation-key.ts';
import { liftRequestDeadline } from '../deadline.ts';
import { parseOrThrow, jsonBodyOnly, saleIdParam } from '../validation.ts';

// A cross-field rule runs only once the fields it compares are valid: zod runs object refinements despite
// field errors, and a bad startsAt would otherwise also be reported as a bad endsAt.
const whenValid =
  (...fields: string[]) =>
  (payload: z.core.ParsePayload): boolean =>
    !payload.issues.some((issue) => fields.includes(String(issue.path?.[0])));

const saleTime = z.iso
  .datetime({ offset: true })
  .transform((value) => new Date(value))
  .refine((date) => date.getTime() >= SALE_TIME_RANGE.min && date.getTime() <= SALE_TIME_RANGE.max, {
    message: `must be between ${new Date(SALE_TIME_RANGE.min).toISOString()} and ${new Date(SALE_TIME_RANGE.max).toISOString()}`,
  });

// Control characters (C0, DEL, C1) and the bidirectional marks, embeddings, overrides and isolates: a
// name carrying them hides or reorders what an operator reads on the dashboard and in the logs. A lone
// surrogate has no UTF-8 form: MySQL would store U+FFFD in its place, silently another name.
const UNSAFE_NAME_CHARACTERS = /[\p{Cc}\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;
const saleName = z
  .string()
  .trim()
  .min(1)
  .max(200)
  .refine((name) => name.isWellFormed(), 'must be well-formed Unicode (it has a lone surrogate)')
  .refine((name) => !UNSAFE_NAME_CHARACTERS.test(name), 'must not contain control characters or bidirectional formatting characters');

const setting = (limits: { min: number; max: number }, integer: boolean) =>
  (integer ? z.number().int() : z.number()).min(limits.min).max(limits.max);

// `admission` absent or { mode: "open" }: an open sale, with no door. { mode: "queue", ... }: behind the
// door, each setting not given at its default (DOOR_TERMS_DEFAULTS).
const admissionBody = z.discriminatedUnion('mode', [
  z.strictObject({ mode: z.literal('open') }),
  z
    .strictObject({
      mode: z.literal('queue'),
      preQueueSeconds: setting(DOOR_TERMS_LIMITS.preQueueSeconds, true).default(DOOR_TERMS_DEFAULTS.preQueueSeconds),
      admitPerSecond: setting(DOOR_TERMS_LIMITS.admitPerSecond, false).default(DOOR_TERMS_DEFAULTS.admitPerSecond),
      admissionTtlSeconds: setting(DOOR_TERMS_LIMITS.admissionTtlSeconds, true).default(DOOR_TERMS_DEFAULTS.admissionTtlSeconds),
      noShowFactor: setting(DOOR_TERMS_LIMITS.noShowFactor, false).default(DOOR_TERMS_DEFAULTS.noShowFactor),
      // Against account farms (docs/api.md, "The door"): each at its default when not given.
      showUpSeconds: setting(DOOR_TERMS_LIMITS.showUpSeconds, true).optional(),
      challenge: z.enum(DOOR_CHALLENGES).default(DOOR_TERMS_DEFAULTS.challenge),
      challengeMaxNumber: setting(DOOR_TERMS_LIMITS.challengeMaxNumber, true).default(DOOR_TERMS_DEFAULTS.challengeMaxNumber),
      requireClaim: z
        .string()
        .regex(CLAIM_NAME, 'must be a claim name: a letter or _, then up to 63 letters, digits or _ . : -')
        .refine(
          (name) => !REGISTERED_CLAIMS.includes(name),
          `must not be a registered claim (${REGISTERED_CLAIMS.join(', ')}): every token may carry those`,
        )
        .optional(),
      maxQueueSize: setting(DOOR_TERMS_LIMITS.maxQueueSize, true).optional(),
    })
    .refine((door) => door.showUpSeconds === undefined || door.showUpSeconds <= door.admissionTtlSeconds, {
      path: ['showUpSeconds'],
      message: 'must not exceed admissionTtlSeconds (the whole turn)',
      when: whenValid('showUpSeconds', 'admissionTtlSeconds'),
    }),
]);

/** A queued sale's settings as parsed, with the defaults that depend on another setting filled in. */
function doorTermsOf(door: Extract<z.infer<typeof admissionBody>, { mode: 'queue' }>): DoorTerms {
  return {
    ...door,
    paused: false,
    // The window never outlasts the turn: a turn shorter than the default window has none.
    showUpSeconds: door.showUpSeconds ?? Math.min(DOOR_TERMS_DEFAULTS.showUpSeconds, door.admissionTtlSeconds),
    requireClaim: door.requireClaim ?? null,
    maxQueueSize: door.maxQueueSize ?? null,
  };
}

const newSaleBody = z
  .strictObject({
    name: saleName,
    stock: z.number().int().min(1).max(MAX_STOCK),
    startsAt: saleTime,
    endsAt: saleTime,
    perUserLimit: z.number().int().min(1).max(MAX_PER_USER_LIMIT).default(1),
    paymentWindowSeconds: z.number().int().min(10).max(86_400).optional(),
    admission: admissionBody.optional(),
    // The rebuy rule; each not given at its deployment default (MAX_ORDERS_PER_BUYER, REBUY_COOLDOWN_SECONDS).
    maxOrdersPerBuyer: setting(REBUY_RULE_LIMITS.maxOrdersPerBuyer, true).optional(),
    rebuyCooldownSeconds: setting(REBUY_RULE_LIMITS.rebuyCooldownSeconds, true).optional(),
  })
  .refine((sale) => sale.endsAt > sale.startsAt, {
    path: ['endsAt'],
    message: 'must be after startsAt',
    when: whenValid('startsAt', 'endsAt'),
  })
  .refine((sale) => sale.perUserLimit <= sale.stock, {
    path: ['perUserLimit'],
    message: 'must not exceed stock',
    when: whenValid('stock', 'perUserLimit'),
  });

// A page of losses: `cursor` is the nextCursor of the previous page, a reservation id of the same sale.
const lossesQuery = (saleId: number) =>
  z.strictObject({
    limit: z
      .string()
      .regex(/^[1-9][0-9]{0,3}$/, `must be a whole number from 1 to ${LOSSES_PAGE.max}`)
      .transform(Number)
      .refine((limit) => limit <= LOSSES_PAGE.max, `must be a whole number from 1 to ${LOSSES_PAGE.max}`)
      .default(LOSSES_PAGE.default),
    cursor: z
      .string()
      .refine((cursor) => saleIdOfReservation(cursor) === saleId, 'must be the nextCursor of a previous page of this sale')
      .optional(),
  });

/** /api/admin/*: creating sales and reading their ledger. app.ts puts the admin authentication in front. */

export function adminRouter(deps: GatewayDeps): Router {
  const { config, sales } = deps;
  const router = Router();

  router.post('/api/admin/sales', jsonBodyOnly, express.json({ limit: config.HTTP_MAX_BODY_BYTES, strict: true }), async (req, res) => {
    const { admission, maxOrdersPerBuyer, rebuyCooldownSeconds, ...parsed } = parseOrThrow(newSaleBody, req.body ?? {});
    const input = {
      ...parsed,
      paymentWindowSeconds: parsed.paymentWindowSeconds ?? config.PAYMENT_WINDOW_SECONDS,
      ...(admission?.mode === 'queue' && { admission: doorTermsOf(admission) }),
      rebuyRule: {
        maxOrdersPerBuyer: maxOrdersPerBuyer ?? config.MAX_ORDERS_PER_BUYER,
        rebuyCooldownSeconds: rebuyCooldownSeconds ?? config.REBUY_COOLDOWN_SECONDS,
      },
    };
    const sale = await sales.createSale(input, creationKeyOf(req.headers['idempotency-key'], input), () => !res.headersSent);
    // An open sale's answer has no `admission` member: a client unaware of the door reads it unchanged.
    res.status(201).json({
      ...saleView(sale),
      paymentWindowSeconds: sale.paymentWindowSeconds,
      ...sale.rebuyRule,
      ...(sale.admission && { admission: admissionView(sale.admission) }),
    });
  });

  router.get('/api/admin/sales/:saleId/stats', async (req, res) => {
    res.json(await sales.readSaleStats(saleIdParam(req.params.saleId)));
  });

  // The reservations answered 202 that no store holds any more: counted, and named where known.
  router.get('/api/admin/sales/:saleId/losses', async (req, res) => {
    const saleId = saleIdParam(req.params.saleId);
    res.json(await sales.readSaleLosses(saleId, parseOrThrow(lossesQuery(saleId), req.query)));
  });

  // Pauses the sale, waits for its stream to drain, rebuilds its Redis state from MySQL and resumes it,
  // through the reconciler's queue: never two at once for a sale.
  router.post('/api/admin/sales/:saleId/reconcile', jsonBodyOnly, async (req, res) => {
    const saleId = saleIdParam(req.params.saleId);
    const result = await sales
      .requestReconciliation(saleId, {
        // BullMQ's connection waits for Redis rather than failing: the enqueue gets the request's deadline.
        enqueueWithin: { ms: config.REDIS_COMMAND_TIMEOUT_MS, what: 'the reconcile queue' },
        // One drain timeout and a margin; the reconciliation goes on regardless of this answer.
        waitMs: config.RECONCILE_DRAIN_TIMEOUT_MS + 30_000,
        ifRunning: 'refuse',
        onQueued: () => liftRequestDeadline(res),
      })
      .catch((error: unknown) => {
        if (!(error instanceof ReconcileUnfinished)) throw error;
        throw new AppError(
          'SERVICE_UNAVAILABLE',
          { because: 'reconcile_unfinished', reason: error.message },
          {
            jobId: error.jobId,
          },
        );
      });
    // What was lost is told to whoever asked: the rebuild judged the replaced state against the last
    // checkpoint whatever the reason it was asked for.
    res.json({
      saleId,
      remaining: result.remaining,
      buyers: result.buyers,
      tookMs: result.tookMs,
      lost: result.lost,
      judgement: result.judgement,
      restored: result.restored ?? { reservations: 0, units: 0 },
    });
  });
  return router;
}
