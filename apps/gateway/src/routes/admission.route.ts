import express, { Router } from 'express';
import { z } from 'zod';
import { DOOR_TERMS_LIMITS } from '@flashsale/domain';
import type { Door } from '@flashsale/sales';
import { jsonBodyOnly, parseOrThrow, saleIdParam } from '../validation.ts';
import { admissionView, doorView, saleView } from './sale-view.ts';

const admissionChange = z.strictObject({
  admitPerSecond: z.number().min(DOOR_TERMS_LIMITS.admitPerSecond.min).max(DOOR_TERMS_LIMITS.admitPerSecond.max).optional(),
  paused: z.boolean().optional(),
});

/**
 * POST /api/admin/sales/:saleId/admission { admitPerSecond?, paused? }: the operator steers a queued
 * sale's door live (packages/sales). Answers the sale with its admission settings and the door as it
 * stands; an empty body changes nothing and reads it. app.ts puts the admin authentication in front.
 */
export function admissionRouter(door: Door, maxBodyBytes: number): Router {
  const router = Router();
  router.post('/api/admin/sales/:saleId/admission', jsonBodyOnly, express.json({ limit: maxBodyBytes, strict: true }), async (req, res) => {
    const saleId = saleIdParam(req.params.saleId);
    const change = parseOrThrow(admissionChange, req.body ?? {});
    const { sale, door: now } = await door.changeAdmission(saleId, change);
    res.json({ ...saleView(sale), admission: admissionView(sale.admission), door: doorView(now) });
  });
  return router;
}
