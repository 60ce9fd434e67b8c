import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Door, QueueReply } from '@flashsale/sales';
import type { BuyerGate } from '../buyer-gate.ts';
import type { RequestLimits } from '../request-limits.ts';
import { renderJson, sendProblem, type FailureAnswer, type RenderedAnswer } from '../problem.ts';
import { sendAfterReads } from '../answer-batch.ts';
import { saleIdParam } from '../validation.ts';
import { armRequestDeadline } from '../deadline.ts';

/** Handles GET /api/sales/:saleId/queue on Node's own request and response objects. */
export type QueueStatusHandler = (req: IncomingMessage, res: ServerResponse, rawSaleId: string) => void;

/** The answer of a join or a status: the buyer's state and ticket, when to ask next, never cached. */
export function renderQueueReply({ saleId, answer, ticket }: QueueReply): RenderedAnswer {
  const rendered = renderJson(200, {
    saleId,
    state: answer.state,
    position: answer.position,
    ahead: answer.ahead,
    etaSeconds: answer.etaSeconds,
    admittedUntil: answer.admittedUntil === null ? null : new Date(answer.admittedUntil).toISOString(),
    ticket,
  });
  // The header order Express's res.set, res.set, res.json wrote before this route left it.
  return { ...rendered, headers: { 'Retry-After': String(answer.retryAfterSeconds), 'Cache-Control': 'no-store', ...rendered.headers } };
}

export interface QueueStatusParts {
  door: Door;
  /** The gateway's one buyer authentication (buyer-gate.ts). */
  buyerOf: BuyerGate;
  /** The queue's budgets, shared with the join (routes/queue.route.ts). */
  limits: RequestLimits;
  /** The gateway's one failure answer (problem.ts), the Express app's own: the same answers, counts and log. */
  fail: FailureAnswer;
  /** REQUEST_DEADLINE_MS: as for every request the app answers. */
  deadlineMs: number;
}

/**
 * A waiting buyer's poll, ahead of Express (routes/crowd-routes.ts): the buyer's budget and token, their
 * ticket, then the door's answer (packages/sales door.ts), which asks Redis nothing while the buyer
 * waits and their ticket proves their place. The answers are the join route's, byte for byte.
 */
export function createQueueStatusHandler({ door, buyerOf, limits, fail, deadlineMs }: QueueStatusParts): QueueStatusHandler {
  const failed = (res: ServerResponse, req: IncomingMessage, error: unknown) => fail(error, res, req.method, req.url ?? '');
  return (req, res, rawSaleId) => {
    let reply: Promise<QueueReply>;
    try {
      const userId = buyerOf(req, limits);
      const ticket = req.headers['queue-ticket'];
      reply = door.status(saleIdParam(rawSaleId), userId, typeof ticket === 'string' ? ticket : undefined);
    } catch (error) {
      return failed(res, req, error);
    }
    // The app's request deadline (deadline.ts): a poll that has to wait on Redis or MySQL (a door being
    // restored, a place looked up) is answered 503 past it, whatever the store does meanwhile.
    const timer = armRequestDeadline(res, deadlineMs, (error) => sendProblem(res, error));
    reply.then(
      (answer) => {
        clearTimeout(timer);
        sendAfterReads(res, renderQueueReply(answer));
      },
      (error: unknown) => {
        clearTimeout(timer);
        failed(res, req, error);
      },
    );
  };
}
