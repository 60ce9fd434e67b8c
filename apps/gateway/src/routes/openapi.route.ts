import { readFileSync } from 'node:fs';
import { Router } from 'express';
import { parse } from 'yaml';

/**
 * The OpenAPI document, `docs/openapi.yaml` at the repository root: the same four levels up from
 * `src/routes/` and from `dist/routes/`, so the sources and the build (and the image, which copies it
 * there) read the one file people edit.
 */
export const OPENAPI_DOCUMENT = new URL('../../../../docs/openapi.yaml', import.meta.url);

let documentJson: string | undefined;

/**
 * The document as JSON text, read and converted on the first call and kept for the life of the process:
 * it is the description of this build, it does not change under a running gateway. A document that is
 * missing or not YAML fails the gateway at start, when the app is built, rather than on the first request.
 */
export function openApiJson(): string {
  documentJson ??= JSON.stringify(parse(readFileSync(OPENAPI_DOCUMENT, 'utf8')));
  return documentJson;
}

/** GET /api/openapi.json: the OpenAPI 3.1 document of the API this gateway serves. */
export function openApiRouter(): Router {
  const body = openApiJson();
  const router = Router();
  router.get('/api/openapi.json', (_req, res) => {
    res.type('application/json').send(body);
  });
  return router;
}
