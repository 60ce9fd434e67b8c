import type { PrismaClient } from './generated/prisma/client.ts';
import type { Logger } from '@flashsale/runtime';
import { changeAdmission, findSale, insertSale, listLiveSales } from './sale-repository.ts';
import { saleOrderLedger } from './sale-counters.ts';
import { abandonSale, adoptSale, beginSaleCreation, listStalledCreations, markPublished } from './sale-publication.ts';
import { findOrderByReservation, paidOrderPages, reservationsWithOrders } from './order-repository.ts';
import { writeOrderBatch } from './order-writer.ts';
import { findCheckpoint, listWatchedSales, liveBuyerPages, lockSaleForRebuild, recordCheckpoint, unitsAcceptedBy } from './sale-ledger.ts';
import { cancelOrder, expireDueOrders, markReturned, pendingReturns, recordOrderlessPayment, recordPayment } from './order-lifecycle.ts';
import { controlSaleInMysql } from './sale-controls.ts';
import { listSalesPage } from './sale-listing.ts';
import {
  countLostReservations,
  findLostReservation,
  listLostReservations,
  listUnmatchedPayments,
  recordRefusalsLost,
} from './lost-reservations.ts';
import { recloseOrders } from './order-reclosing.ts';
import { closedOrdersPage } from './closed-orders.ts';
import { mysqlServerIdentity } from './mysql-identity.ts';
import { mysqlAnswers } from './mysql-unavailable.ts';
import { checkServerSettings } from './server-settings.ts';

/**
 * One deployment's MySQL, bound to its client, as `createSaleStore` binds Redis's to its client and key
 * prefix: what the application layer (packages/sales) calls, so that a use case reads
 * `orders.sale(id).find()` rather than threading the client through every step. Each method is the function of the module that owns the
 * table or the statement it names; those modules stay the owners, this only binds.
 */
export function createOrderStore(prisma: PrismaClient) {
  const bound =
    <A extends unknown[], R>(operation: (client: PrismaClient, ...args: A) => R) =>
    (...args: A): R =>
      operation(prisma, ...args);
  return {
    insertSale: bound(insertSale),
    /** Starts a create: the row inserted `publishing`, or the first create of the same idempotency key. */
    beginSaleCreation: bound(beginSaleCreation),
    listLiveSales: bound(listLiveSales),
    /** The sales the reconciler watches, judged on MySQL's clock. */
    listWatchedSales: bound(listWatchedSales),
    listStalledCreations: bound(listStalledCreations),
    listSalesPage: bound(listSalesPage),
    findOrderByReservation: bound(findOrderByReservation),
    reservationsWithOrders: bound(reservationsWithOrders),
    findLostReservation: bound(findLostReservation),
    recordPayment: bound(recordPayment),
    recordOrderlessPayment: bound(recordOrderlessPayment),
    cancelOrder: bound(cancelOrder),
    expireDueOrders: bound(expireDueOrders),
    pendingReturns: bound(pendingReturns),
    markReturned: bound(markReturned),
    /** The identity of the MySQL server answering (server_id, server_uuid). */
    serverIdentity: () => mysqlServerIdentity(prisma),
    /** Whether MySQL answers a trivial query now. */
    answers: () => mysqlAnswers(prisma),
    /** Logs the server settings the order writer relies on that are off (strict mode, autoinc lock mode). */
    checkServerSettings: (logger: Logger) => checkServerSettings(prisma, logger),
    /** One sale's rows. */
    sale: (saleId: number) => bindSale(prisma, saleId),
  };
}

export type OrderStore = ReturnType<typeof createOrderStore>;
export type SaleOrders = ReturnType<typeof bindSale>;

function bindSale(prisma: PrismaClient, saleId: number) {
  const bound =
    <A extends unknown[], R>(operation: (client: PrismaClient, id: number, ...args: A) => R) =>
    (...args: A): R =>
      operation(prisma, saleId, ...args);
  return {
    saleId,
    find: bound(findSale),
    /** The operator's change of a queued sale's door, MySQL's record of it. */
    changeAdmission: bound(changeAdmission),
    /** Its orders and units by status, from the counters the transactions keep (sale-counters.ts). */
    orderLedger: bound(saleOrderLedger),
    markPublished: bound(markPublished),
    adopt: bound(adoptSale),
    abandon: bound(abandonSale),
    /** The operator's control, MySQL's half, under the sale row lock (sale-controls.ts). */
    control: bound(controlSaleInMysql),
    writeOrderBatch: bound(writeOrderBatch),
    paidOrderPages: bound(paidOrderPages),
    findCheckpoint: bound(findCheckpoint),
    recordCheckpoint: bound(recordCheckpoint),
    /** The sale row locked for a rebuild's judgement and generation switch (sale-ledger.ts). */
    lockForRebuild: bound(lockSaleForRebuild),
    liveBuyerPages: bound(liveBuyerPages),
    unitsAcceptedBy: bound(unitsAcceptedBy),
    countLostReservations: bound(countLostReservations),
    listLostReservations: bound(listLostReservations),
    listUnmatchedPayments: bound(listUnmatchedPayments),
    recordRefusalsLost: bound(recordRefusalsLost),
    recloseOrders: bound(recloseOrders),
    closedOrdersPage: bound(closedOrdersPage),
  };
}
