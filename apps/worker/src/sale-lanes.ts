/**
 * The batches a worker has under way, by sale: each sale has a lane of `width` batches at most, and the
 * worker reads a sale only while its lane has room. A sale whose writes are slow or retried for a long
 * time fills its own lane and no other: the worker goes on reading and writing the other sales, rather
 * than waiting for a round of every sale to finish with its slowest. It also bounds what a worker holds
 * while MySQL is away (`width` batches per sale, each retried), as rounds of every sale did.
 */
export class SaleLanes {
  private readonly inLane = new Map<number, number>();
  private readonly underWay = new Set<Promise<void>>();
  private ended: PromiseWithResolvers<void> | undefined;

  constructor(private readonly width: number) {}

  hasRoom(saleId: number): boolean {
    return (this.inLane.get(saleId) ?? 0) < this.width;
  }

  /** Runs a batch in the sale's lane. `batch` handles its own failure: it must not reject. */
  run(saleId: number, batch: Promise<void>): void {
    this.inLane.set(saleId, (this.inLane.get(saleId) ?? 0) + 1);
    const done = batch.finally(() => {
      const left = (this.inLane.get(saleId) ?? 1) - 1;
      if (left === 0) this.inLane.delete(saleId);
      else this.inLane.set(saleId, left);
      this.underWay.delete(done);
      this.ended?.resolve();
      this.ended = undefined;
    });
    this.underWay.add(done);
  }

  /** Resolves when the next batch ends; while none is under way, never (race it with a pause). */
  nextEnd(): Promise<void> {
    this.ended ??= Promise.withResolvers<void>();
    return this.ended.promise;
  }

  /** Resolves once every batch under way has ended. */
  async drain(): Promise<void> {
    while (this.underWay.size > 0) await Promise.all([...this.underWay]);
  }
}
