import { describe, expect, it } from 'vitest';
import { renderProblem } from '../problem.ts';
import { createDuplicateAnswer } from './duplicate-answer.ts';

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
