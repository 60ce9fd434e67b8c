import type { System } from './system.ts';
import { until } from './until.ts';

/**
 * Until the reconciler has caught up with the primary serving the sale now: the sale's checkpoint is of
 * that server's history of writes (master_replid), and it is not paused. A failover changes the history,
 * and the watch's first look after it asks for a rebuild (the sale's checkpoint dates from its publish at
 * the latest), which records the rebuilt state's checkpoint in the new history before it resumes; until
 * then the promoted primary may hold units MySQL has sold. A second failover of a starved machine starts
 * it over. Returned for the failure message.
 */
export async function convergedOnPrimary(s: Pick<System, 'ctx'>, saleId: number) {
  const { ctx } = s;
  return until(
    async () => {
      const snapshot = await ctx.store.sale(saleId).snapshot();
      const row = await ctx.prisma.sale.findUniqueOrThrow({ where: { id: saleId } });
      return {
        primary: snapshot.replicationId ?? null,
        checkpoint: row.checkpointReplicationId,
        paused: snapshot.paused,
        generation: snapshot.generation === row.redisGeneration,
      };
    },
    (state) => state.primary !== null && state.checkpoint === state.primary && !state.paused && state.generation,
    120_000,
  );
}
