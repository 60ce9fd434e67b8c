export {
  RECONCILE_QUEUE,
  AUDIT_QUEUE,
  bullPrefix,
  bullConnection,
  reconcileJobId,
  createReconcileJobs,
  enqueueReconcile,
  reconcileUnfinished,
  type ReconcileJobs,
  type ReconcileJobData,
  type ReconcileReason,
  type ReconcileResult,
} from './reconcile-queue.ts';
export { openQueueCounts, type QueueCounts } from './queue-counts.ts';
