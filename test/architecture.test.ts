import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The layers' direction, read from the sources' imports (every `import`, `import type`, `export ... from`
 * and dynamic `import()`, as the TypeScript compiler lists them; test files are left out, they may reach
 * anywhere). The layers, from the outside in:
 *
 *   apps/*            processes: parse, call one use case, render (routes, commands, loops, wiring)
 *   packages/sales    the application layer: every use case spanning MySQL and Redis
 *   packages/redis-store, packages/order-store   one store each, independent of each other
 *   packages/domain   pure rules, no I/O
 */
const ROOT = resolve(import.meta.dirname, '..');

const REDIS_STORE = '@flashsale/redis-store';
const ORDER_STORE = '@flashsale/order-store';
const SALES = '@flashsale/sales';

interface SourceFile {
  /** Relative to the repository, with forward slashes. */
  path: string;
  imports: string[];
}

function sourcesUnder(dir: string): SourceFile[] {
  const files: SourceFile[] = [];
  for (const entry of readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })) {
    if (!entry.endsWith('.ts') || entry.endsWith('.test.ts') || entry.endsWith('.d.ts')) continue;
    const path = `${dir}/${entry.split('\\').join('/')}`;
    if (path.includes('/node_modules/') || path.includes('/dist/') || path.includes('/generated/')) continue;
    const text = readFileSync(join(ROOT, path), 'utf8');
    const imports = ts.preProcessFile(text, true, true).importedFiles.map((file) => file.fileName);
    files.push({ path, imports });
  }
  return files;
}

/** The repository path a relative import points to (null for a package's). */
function resolvedPath(from: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null;
  return relative(ROOT, resolve(ROOT, from, '..', specifier))
    .split('\\')
    .join('/');
}

/** Whether `specifier` is the package `name` or one of its subpaths (`@flashsale/redis-store/testing`). */
const isPackage = (specifier: string, name: string) => specifier === name || specifier.startsWith(`${name}/`);

const APP_PACKAGES = ['@flashsale/gateway', '@flashsale/worker', '@flashsale/reconciler'];

const apps = ['apps/gateway/src', 'apps/worker/src', 'apps/reconciler/src'].flatMap(sourcesUnder);
const packages = readdirSync(join(ROOT, 'packages')).flatMap((name) => sourcesUnder(`packages/${name}/src`));

/** Every import of `files` that `forbidden` refuses, as "file -> import". */
function violations(files: SourceFile[], forbidden: (file: SourceFile, specifier: string) => boolean): string[] {
  return files.flatMap((file) =>
    file.imports.filter((specifier) => forbidden(file, specifier)).map((specifier) => `${file.path} -> ${specifier}`),
  );
}

describe('the layers', () => {
  it('finds the sources it judges', () => {
    expect(apps.map((file) => file.path)).toContain('apps/gateway/src/routes/payments.route.ts');
    expect(packages.map((file) => file.path)).toContain('packages/sales/src/sale-reconciliation.ts');
  });

  it('no file of an app imports both stores: a use case of both lives in packages/sales', () => {
    const both = apps
      .filter((file) => file.imports.some((s) => isPackage(s, REDIS_STORE)) && file.imports.some((s) => isPackage(s, ORDER_STORE)))
      .map((file) => file.path);
    // The processes and the commands get their connections from packages/bootstrap (openStores,
    // openCommandStores) and hand them to the use cases.
    expect(both).toEqual([]);
  });

  it('a file of an app imports no store and no reconcile queue: only the facade of packages/sales, bootstrap, domain, runtime and config', () => {
    const allowed = [SALES, '@flashsale/bootstrap', '@flashsale/domain', '@flashsale/runtime', '@flashsale/config'];
    expect(
      violations(
        apps,
        (file, specifier) =>
          (specifier.startsWith('@flashsale/') && !allowed.includes(specifier)) ||
          (resolvedPath(file.path, specifier)?.startsWith('packages/') ?? false),
      ),
    ).toEqual([]);
  });

  it('packages never import apps', () => {
    expect(
      violations(
        packages,
        (file, specifier) =>
          APP_PACKAGES.some((name) => isPackage(specifier, name)) || (resolvedPath(file.path, specifier)?.startsWith('apps/') ?? false),
      ),
    ).toEqual([]);
  });

  it('the store packages import neither the application layer nor each other', () => {
    const stores = packages.filter(
      (file) => file.path.startsWith('packages/redis-store/') || file.path.startsWith('packages/order-store/'),
    );
    expect(
      violations(stores, (file, specifier) => {
        const other = file.path.startsWith('packages/redis-store/') ? ORDER_STORE : REDIS_STORE;
        return isPackage(specifier, SALES) || isPackage(specifier, other);
      }),
    ).toEqual([]);
  });

  it('the domain imports no store, no application layer, no other package', () => {
    const domain = packages.filter((file) => file.path.startsWith('packages/domain/'));
    expect(violations(domain, (_file, specifier) => specifier.startsWith('@flashsale/'))).toEqual([]);
  });
});
