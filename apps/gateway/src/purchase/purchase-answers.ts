import { renderJson, renderProblem, type RenderedAnswer } from '../problem.ts';

/**
 * The two answers the purchase path gives per buyer, each built from a part rendered once, byte for byte
 * what `renderJson` and `renderProblem` make of the same values. A crowd gets one of them on nearly every
 * request, and building the whole document each time (the object, JSON.stringify, the headers spread)
 * was a measurable share of the purchase path's CPU; only the buyer's values differ between answers.
 */

/**
 * The 202 of a reservation: `{"reservationId":…,"saleId":…,"quantity":…,"status":"pending"}`. The id is
 * one `newReservationId` made (digits, hyphens and hex: nothing JSON escapes), the other two integers,
 * so the body is ASCII and its length is its byte count.
 */
export function createAcceptedAnswer(): (reservationId: string, saleId: number, quantity: number) => RenderedAnswer {
  const contentType = renderJson(202, {}).headers['Content-Type'];
  return (reservationId, saleId, quantity) => {
    const body = `{"reservationId":"${reservationId}","saleId":${saleId},"quantity":${quantity},"status":"pending"}`;
    return { status: 202, headers: { 'Content-Type': contentType, 'Content-Length': body.length }, body };
  };
}

/**
 * The answer to a buyer who already holds a reservation (409 ALREADY_PURCHASED with its id). The id comes
 * from Redis (the buyer's record), so it is JSON-encoded here like any string.
 */
export function createDuplicateAnswer(): (reservationId: string) => RenderedAnswer {
  const { status, headers, body } = renderProblem({ code: 'ALREADY_PURCHASED' });
  // The document's members, without its closing brace: the id goes last, as `extra` would put it.
  const head = `${body.slice(0, -1)},"reservationId":`;
  const contentType = headers['Content-Type'];
  return (reservationId) => {
    const text = `${head}${JSON.stringify(reservationId)}}`;
    return { status, headers: { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(text) }, body: text };
  };
}
