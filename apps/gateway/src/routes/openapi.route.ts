import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Router } from 'express';

/**
 * The OpenAPI document, `docs/openapi.yaml` at the repository root: the same four levels up from
 * `src/routes/` and from `dist/routes/`, so the sources and the build (and the image, which copies it
 * there) read the one file people edit.
 */
export const OPENAPI_DOCUMENT = new URL('../../../../docs/openapi.yaml', import.meta.url);

let documentJson: Promise<string> | undefined;

/**
 * The document as JSON text, read and converted on the first call and kept for the life of the process:
 * it is the description of this build, it does not change under a running gateway. The YAML parser is
 * loaded then too: parsing 1,800 lines of YAML was a tenth of a gateway's start-up CPU, for a document
 * few gateways are ever asked for.
 */
export function openApiJson(): Promise<string> {
  documentJson ??= (async () => {
    const [{ parse }, text] = await Promise.all([import('yaml'), readFile(OPENAPI_DOCUMENT, 'utf8')]);
    return JSON.stringify(parse(text));
  })();
  return documentJson;
}

/**
 * GET /api/openapi.json: the OpenAPI 3.1 document of the API this gateway serves. A build without the
 * document fails the gateway at start, when the app is built, rather than on the first request; that it
 * parses is the tests' to say (openapi.route.test.ts).
 */
export function openApiRouter(): Router {
  if (!existsSync(OPENAPI_DOCUMENT)) throw new Error(`the OpenAPI document is missing: ${OPENAPI_DOCUMENT.pathname}`);
  const router = Router();
  router.get('/api/openapi.json', async (_req, res) => {
    res.type('application/json').send(await openApiJson());
  });
  return router;
}
