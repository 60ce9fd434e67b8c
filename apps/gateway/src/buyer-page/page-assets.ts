import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';

const brotliAsync = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

export type PageEncoding = 'br' | 'gzip' | 'identity';

/**
 * One file of the buyer's page, as sent: its bytes, and the same compressed once, at the first request
 * that asks for that encoding (in libuv's thread pool, off the event loop), then kept: no process pays
 * for it before it is ready (about 45 ms of CPU for the page's files, brotli at quality 11), and the
 * crowd that loads the page pays a lookup and a write.
 */
export interface PageAsset {
  type: string;
  identity: Buffer;
  body(encoding: PageEncoding): Promise<Buffer>;
}

/** The page's files, by the name the page asks for (the static ones carry their content's hash). */
export interface PageAssets {
  /** The page's HTML (one for every sale: the script reads the sale from its address). */
  page: PageAsset;
  /** The answer for a sale that does not exist, or an id that is not one. */
  notFound: PageAsset;
  /** `page.<hash>.js` and the others, served forever-cacheable: a change is a new name. */
  statics: Map<string, PageAsset>;
}

/** What the page's HTML tells its script about this gateway (body `data-*` attributes). */
export interface PageSettings {
  /** Outside production: the development sign-in and the demo's payment provider. */
  development: boolean;
  paymentUrl: string | undefined;
  signInUrl: string | undefined;
}

const PUBLIC = new URL('../../public/buyer/', import.meta.url);
const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
};
/** The page's files, leaves first: a file's references to those before it are rewritten to their hashed names. */
const STATIC_FILES = ['buyer-api.js', 'pow-worker.js', 'page.css', 'page.js'];

function assetOf(type: string, identity: Buffer): PageAsset {
  const compressed: Partial<Record<PageEncoding, Promise<Buffer>>> = { identity: Promise.resolve(identity) };
  const compress = (encoding: PageEncoding) =>
    encoding === 'br'
      ? brotliAsync(identity, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: identity.length } })
      : gzipAsync(identity, { level: 9 });
  return { type, identity, body: (encoding) => (compressed[encoding] ??= compress(encoding)) };
}

const escapeAttribute = (value: string) =>
  value.replaceAll('&', '&amp;').replaceAll('"', '&quot;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

/**
 * Reads the page's files once, names each static file by its content's hash (page.js's imports of the
 * others and the HTML's links rewritten to match), each compressed once when first asked for (assetOf):
 * the crowd that loads the page costs the gateway a lookup and a write, no compression per request. No
 * build step: these are the files in public/buyer as written, renamed.
 */
export function loadPageAssets(settings: PageSettings): PageAssets {
  const hashed = new Map<string, string>();
  const statics = new Map<string, PageAsset>();
  const rewrite = (text: string) => {
    let out = text;
    for (const [file, name] of hashed) out = out.replaceAll(`'./${file}'`, `'./${name}'`).replaceAll(`%${file}%`, `/s/assets/${name}`);
    return out;
  };
  for (const file of STATIC_FILES) {
    const body = Buffer.from(rewrite(readFileSync(new URL(file, PUBLIC), 'utf8')));
    const dot = file.lastIndexOf('.');
    const name = `${file.slice(0, dot)}.${createHash('sha256').update(body).digest('hex').slice(0, 12)}${file.slice(dot)}`;
    hashed.set(file, name);
    statics.set(name, assetOf(TYPES[file.slice(dot)]!, body));
  }
  const data: Record<string, string | undefined> = {
    'data-development': settings.development ? '1' : undefined,
    'data-payment-url': settings.paymentUrl,
    'data-sign-in-url': settings.signInUrl,
  };
  const attributes = Object.entries(data)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => ` ${name}="${escapeAttribute(value!)}"`)
    .join('');
  const html = (file: string) => Buffer.from(rewrite(readFileSync(new URL(file, PUBLIC), 'utf8')).replace('<body>', `<body${attributes}>`));
  return { page: assetOf(TYPES['.html']!, html('index.html')), notFound: assetOf(TYPES['.html']!, html('not-found.html')), statics };
}

/** The encoding to send an asset in for a request's Accept-Encoding: brotli, then gzip, else none. */
export function encodingFor(acceptEncoding: string | undefined): PageEncoding {
  const accepted = new Set<string>();
  for (const part of (acceptEncoding ?? '').split(',')) {
    const [coding, ...params] = part.split(';');
    // `q=0` says "not this one".
    if (!params.some((param) => /^\s*q=0(\.0*)?\s*$/.test(param))) accepted.add(coding!.trim().toLowerCase());
  }
  if (accepted.has('br')) return 'br';
  if (accepted.has('gzip')) return 'gzip';
  return 'identity';
}
