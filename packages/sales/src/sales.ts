import type { SaleControl } from '@flashsale/domain';
import type { ReconcileJobs, ReconcileReason } from '@flashsale/jobs';
import { createOrderStore, type CreationKey, type NewSale, type PaymentEventInput, type PrismaClient } from '@flashsale/order-store';
import type { SaleStore } from '@flashsale/redis-store';
import type { Logger } from '@flashsale/runtime';
import { createDoor, type Door, type DoorDeps } from './door.ts';
import { DoorFrontiers } from './door-frontier.ts';
import { createSale } from './sale-creation.ts';
import { runSaleControl, type ControlActor } from './sale-controls.ts';
import { listAdminSales, readAdminSale, readBuyerSale, saleExists } from './sale-list.ts';
import type { SaleMisses } from './sale-misses.ts';
import { readSaleStats } from './sale-stats.ts';
import { readSaleLosses } from './sale-losses.ts';
import { payReservation } from './payment-intake.ts';
import { cancelReservation } from './order-cancel.ts';
import { findReservationStatus } from './reservation-status.ts';
import { runExpiryPass } from './order-expiry.ts';
import { OrderIntake, type OrderIntakeObserver } from './order-intake.ts';
import { reconcileSale } from './sale-reconciliation.ts';
import { auditAndReport, type AuditReport } from './ledger-audit.ts';
import { lastReconciliation, queueReconciliation, requestReconciliation, type ReconcileRequest } from './reconcile-request.ts';
import { listSalesToWatch, retireFinishedSales, watchedSaleIds, watchOneSale, type LookTerms, type SaleWatch } from './sale-watch.ts';
import { watchMysqlServer } from './mysql-server-watch.ts';
import type { WatchedSale } from '@flashsale/order-store';
import type { SalesDeps } from './sales-deps.ts';

/** What the use cases take from the configuration, given once (packages/bootstrap maps the environment). */
export interface SalesOptions {
  /** DATABASE_URL: the named lock that keeps two runs of one sale's reconciliation apart has its own connection. */
  databaseUrl: string;
  /** REDIS_COMMAND_TIMEOUT_MS: how long after Redis's now a create's publish may still go live. */
  publishTimeoutMs: number;
  /** RECONCILE_DRAIN_TIMEOUT_MS: how long a reconciliation waits for the sale's stream to drain. */
  drainTimeoutMs: number;
}

export interface SalesSetup {
  /** The deployment's Redis, bound to its client and key prefix (createSaleStore). */
  saleStore: SaleStore;
  prisma: PrismaClient;
  logger: Logger;
  options: SalesOptions;
  /** The reconcile queue, for the processes that ask for reconciliations (the gateway, the reconciler, the command). */
  jobs?: ReconcileJobs;
}

/** What a gateway gives its door besides the stores: its secret, its copy's age, its own memory and metrics. */
export type DoorParts = Pick<DoorDeps, 'authSecret' | 'misses' | 'flagClaim' | 'onShadowJoin'> & {
  /** DOOR_FRONTIER_MAX_AGE_MS: how old this process's copy of a door may be before it asks Redis again. */
  frontierMaxAgeMs: number;
};

/** The reconciler watch's settings (its own loop's, per process): see SaleWatch. */
export type WatchSettings = Omit<SaleWatch, keyof SalesDeps | 'requestReconcile'>;

/**
 * The application layer's one door for the apps, built once per process (packages/bootstrap): every use
 * case of the two stores as a method, over each store bound once (a SaleStore, createOrderStore). A
 * route, a command or an app's loop parses, calls one method, renders; it never reaches a store itself.
 * The crash-point argument of each protocol sits in the file of its use case.
 */
export function createSales({ saleStore, prisma, logger, options, jobs }: SalesSetup) {
  const deps: SalesDeps = { redis: saleStore, mysql: createOrderStore(prisma), logger };
  const reconcileJobs = (): ReconcileJobs => {
    if (!jobs) throw new Error('these sales were built without the reconcile queue');
    return jobs;
  };
  const queueFor = (saleId: number, reason: ReconcileReason) => queueReconciliation(deps, reconcileJobs(), saleId, reason);
  return {
    /** Redis's clock, the one every script judges by. */
    now: () => deps.redis.now(),

    // The purchase: one script in Redis (the hot path binds nothing per request), the workers told of it,
    // and what a gateway keeps to answer without Redis.
    reserve: deps.redis.reserve,
    workSignaller: deps.redis.workSignaller,
    /** A small sale's buyers and their reservations, null past `max` (the verdict cache's holders). */
    saleBuyers: (saleId: number, max: number) => deps.redis.sale(saleId).buyers(max),
    listLiveSales: () => deps.mysql.listLiveSales(),

    // Sales: created, read, controlled.
    createSale: (input: NewSale, key: CreationKey | undefined, stillWanted: () => boolean) =>
      createSale({ ...deps, publishTimeoutMs: options.publishTimeoutMs }, input, key, stillWanted),
    runSaleControl: (saleId: number, control: SaleControl, actor: ControlActor, address?: string) =>
      runSaleControl(deps, saleId, control, actor, address),
    listAdminSales: (page: { limit: number; cursor?: number }) => listAdminSales(deps, page),
    readAdminSale: (saleId: number) => readAdminSale(deps, saleId),
    readBuyerSale: (saleId: number, misses?: SaleMisses) => readBuyerSale({ ...deps, misses }, saleId),
    saleExists: (saleId: number) => saleExists(deps.mysql, saleId),
    readSaleStats: (saleId: number) => readSaleStats(deps, saleId),
    readSaleLosses: (saleId: number, page: { limit: number; cursor?: string }) => readSaleLosses(deps.mysql, saleId, page),

    // Orders: paid, cancelled, looked up, expired, written from the stream.
    payReservation: (event: PaymentEventInput, door: Pick<Door, 'paid'>) => payReservation({ ...deps, door }, event),
    cancelReservation: (saleId: number, reservationId: string, userId: string, retryAfterSeconds: number) =>
      cancelReservation(deps, saleId, reservationId, userId, retryAfterSeconds),
    findReservationStatus: (saleId: number, reservationId: string, userId: string) =>
      findReservationStatus(deps, saleId, reservationId, userId),
    runExpiryPass: (batchSize: number) => runExpiryPass(deps, batchSize),
    orderIntake: (observer: OrderIntakeObserver | undefined, intake: ConstructorParameters<typeof OrderIntake>[1]) =>
      new OrderIntake({ ...deps, observer }, intake),
    /** The order writers' reads of their sales' streams (reservation-stream.ts). */
    listSaleIds: deps.redis.listSaleIds,
    readNewEntries: deps.redis.readNewEntries,
    claimIdleEntriesOf: deps.redis.claimIdleEntriesOf,
    keepHeld: deps.redis.keepHeld,
    /** Logs the MySQL settings the order writer relies on that are off. */
    checkServerSettings: () => deps.mysql.checkServerSettings(logger),

    /** The door of queued sales (door.ts): join, status, show up, the operator's change, paid units. */
    openDoor: ({ frontierMaxAgeMs, ...parts }: DoorParts): Door =>
      createDoor({ ...deps, ...parts, frontiers: new DoorFrontiers(deps.redis, frontierMaxAgeMs) }),

    // Reconciliation: asked for by an operator, run as a job, watched for, audited.
    requestReconciliation: (saleId: number, request: ReconcileRequest) => requestReconciliation(deps, reconcileJobs(), saleId, request),
    queueReconciliation: queueFor,
    lastReconciliation: (saleId: number) => lastReconciliation(reconcileJobs(), saleId),
    reconcileSale: (saleId: number, reason: ReconcileReason) =>
      reconcileSale(
        {
          ...deps,
          databaseUrl: options.databaseUrl,
          drainTimeoutMs: options.drainTimeoutMs,
          announce: (id) => deps.redis.sale(id).announceChanged(),
        },
        saleId,
        reason,
      ),
    auditAndReport: (saleId: number, onReport: (report: AuditReport & { confirmed: boolean }) => void) =>
      auditAndReport({ ...deps, onReport }, saleId),
    /** The reconciler's watch over the sales (sale-watch.ts), with its loop's settings. */
    saleWatch: (settings: WatchSettings) => {
      const watch: SaleWatch = { ...deps, ...settings, requestReconcile: queueFor };
      return {
        listSales: () => listSalesToWatch(watch),
        look: (sale: WatchedSale, terms?: LookTerms) => watchOneSale(watch, sale, terms),
        retireFinished: (listed: WatchedSale[]) => retireFinishedSales(watch, listed),
        watchMysqlServer: (liveSaleIds: readonly number[]) => watchMysqlServer(watch, liveSaleIds),
      };
    },
    watchedSaleIds: (watchAfterEndMs: number) => watchedSaleIds(deps, watchAfterEndMs),

    // What the dashboard and the reconciler's metrics read of one store alone.
    saleState: (saleId: number) => deps.redis.sale(saleId).state(),
    saleBacklog: (saleId: number) => deps.redis.sale(saleId).backlog(),
    writersProgress: (saleId: number) => deps.redis.sale(saleId).writersProgress(),
    recentDeadLettersByReason: (saleId: number) => deps.redis.sale(saleId).recentDeadLettersByReason(),
    doorGauges: (saleId: number, at?: number) => deps.redis.sale(saleId).doorGauges(at),
    redisMemory: deps.redis.memory,
    /** The dashboard's sessions (admin-session.ts). */
    createAdminSession: deps.redis.createAdminSession,
    readAdminSession: deps.redis.readAdminSession,
    deleteAdminSession: deps.redis.deleteAdminSession,
  };
}

export type Sales = ReturnType<typeof createSales>;
