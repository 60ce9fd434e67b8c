import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { Validator } from '@seriousme/openapi-schema-validator';
import { ERRORS, type ErrorCode } from '@flashsale/domain';
import { gatewayPerFile, type TestGateway } from '../../../../test/support/gateway.ts';
import { problemDocument } from '../problem.ts';
import { OPENAPI_DOCUMENT } from './openapi.route.ts';

let gateway: TestGateway;
gatewayPerFile((_ctx, server) => {
  gateway = server;
});

type Json = Record<string, unknown>;
const document = parse(readFileSync(OPENAPI_DOCUMENT, 'utf8')) as Json;
const components = document.components as { schemas: Record<string, Json>; responses: Record<string, Json> };

/** The schema named by a local `$ref` (`#/components/...`), or the object itself when it is not one. */
function deref(value: Json): Json {
  const ref = value.$ref;
  if (typeof ref !== 'string' || !ref.startsWith('#/')) return value;
  return ref
    .slice(2)
    .split('/')
    .reduce<Json>((node, key) => node[key.replaceAll('~1', '/').replaceAll('~0', '~')] as Json, document);
}

/** The problem schema of each catalogue code: `SOLD_OUT` is `SoldOutProblem`. */
const problemSchemaName = (code: string) =>
  `${code
    .toLowerCase()
    .split('_')
    .map((word) => word[0]!.toUpperCase() + word.slice(1))
    .join('')}Problem`;

/** The codes a problem response may carry: its schema's `code` const, or each of its `oneOf`'s. */
function codesOf(schema: Json): string[] {
  const options = (schema.oneOf as Json[] | undefined) ?? [schema];
  return options.map((option) => (deref(option).properties as { code: { const: string } }).code.const);
}

const operations = Object.entries(document.paths as Record<string, Record<string, Json>>).flatMap(([path, item]) =>
  Object.entries(item).map(([method, operation]) => ({
    name: `${method.toUpperCase()} ${path}`,
    responses: operation.responses as Record<string, Json>,
  })),
);

describe('GET /api/openapi.json', () => {
  it('serves docs/openapi.yaml, converted to JSON', async () => {
    const res = await fetch(`${gateway.url}/api/openapi.json`);

    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await res.json()).toEqual(document);
  });
});

describe('docs/openapi.yaml', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();

    const result = await validator.validate(document);

    expect(result).toEqual({ valid: true });
    expect(validator.version).toBe('3.1');
  });

  it('enumerates exactly the codes of the error catalogue', () => {
    expect(components.schemas.ErrorCode!.enum).toEqual(Object.keys(ERRORS));
  });

  it.each(Object.keys(ERRORS) as ErrorCode[])("describes %s with the catalogue's status, title and type", (code) => {
    const { type, title, status } = problemDocument({ code });
    const schema = components.schemas[problemSchemaName(code)];

    expect(schema?.$ref).toBe('#/components/schemas/Problem');
    expect(schema?.properties).toMatchObject({
      type: { const: type },
      title: { const: title },
      status: { const: status },
      code: { const: code },
    });
    expect(schema?.unevaluatedProperties).toBe(false);
  });

  it('has a problem schema for no code outside the catalogue', () => {
    const problemSchemas = Object.keys(components.schemas).filter((name) => name.endsWith('Problem') && name !== 'Problem');

    expect(problemSchemas.sort()).toEqual(Object.keys(ERRORS).map(problemSchemaName).sort());
  });

  it('describes every response by its exact status, never a range or a default', () => {
    const statuses = operations.flatMap(({ responses }) => Object.keys(responses));

    expect(statuses.filter((status) => !/^[1-5][0-9]{2}$/.test(status))).toEqual([]);
  });

  it.each(operations)("answers $name only with codes whose catalogue status is the response's", ({ responses }) => {
    const mismatched = Object.entries(responses).flatMap(([status, response]) => {
      const problem = (deref(response).content as Record<string, { schema: Json }> | undefined)?.['application/problem+json'];
      if (!problem) return [];
      return codesOf(problem.schema)
        .filter((code) => ERRORS[code as ErrorCode]?.status !== Number(status))
        .map((code) => `${status} ${code}`);
    });

    expect(mismatched).toEqual([]);
  });
});
