/**
 * A purchase the reserve script accepted, on its way to becoming an order: what a sale's stream carries
 * (redis-store's reservation-stream.ts owns that format and adds the stream entry id) and what the order
 * writer turns into a row. Identified by its reservation id, unique across sales and Redis losses.
 */
export interface Reservation {
  reservationId: string;
  saleId: number;
  userId: string;
  quantity: number;
  /** When the reserve script accepted it: epoch ms on Redis's clock. */
  reservedAt: number;
  /** The generation of the sale's Redis state that accepted it (see the order writer's STALE_GENERATION). */
  generation: string;
}
