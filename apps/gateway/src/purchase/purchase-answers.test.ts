import { describe, expect, it } from 'vitest';
import { newReservationId } from '@flashsale/domain';
import { renderJson, renderProblem } from '../problem.ts';
import { createAcceptedAnswer, createDuplicateAnswer } from './purchase-answers.ts';

describe('the accepted answer', () => {
  it.each([
    [1, 1],
    [4_294_967_295, 10],
    [70, 3],
  ])('is byte for byte the JSON of the reservation (sale %i, quantity %i)', (saleId, quantity) => {
    const reservationId = newReservationId(saleId);
    const answer = createAcceptedAnswer()(reservationId, saleId, quantity);

    expect(answer).toEqual(renderJson(202, { reservationId, saleId, quantity, status: 'pending' }));
    expect(answer.body).toBe(renderJson(202, { reservationId, saleId, quantity, status: 'pending' }).body);
  });
});

describe('the duplicate answer', () => {
  it.each(['12-8c0f1e2a-1b2c-4d3e-8f4a-5b6c7d8e9f00', '7-r', 'quote " and \\ and \u00e9\u{1F600}'])(
    'is byte for byte the ALREADY_PURCHASED problem document with the reservation id (%s)',
    (reservationId) => {
      const answer = createDuplicateAnswer()(reservationId);

      expect(answer).toEqual(renderProblem({ code: 'ALREADY_PURCHASED', extra: { reservationId } }));
      expect(answer.status).toBe(409);
      expect(JSON.parse(answer.body)).toMatchObject({ code: 'ALREADY_PURCHASED', reservationId });
    },
  );
});
