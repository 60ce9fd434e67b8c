// Bundles one app's built entry point (dist/main.js, what tsc emitted) into one file, dist/bundle/main.js,
// with the workspace packages and the dependencies it imports: what `node scripts/start.mjs <role>` (and
// so the image) runs. Run by each app's `npm run build` after tsc, from the app's folder.
//
// Why: a role spent most of its start loading modules, 900 to 1,100 files, each resolved, stat'ed, read and
// wrapped on its own, with the package.json files on the way (docs/performance.md, "Time to ready"). One
// file is read and compiled once.
//
// What stays outside the bundle, loaded from node_modules at run time as before:
// - Prisma's query compiler (4.5 MB of base64 WebAssembly), which the generated client imports only when
//   it first talks to MySQL;
// - the optional native modules (msgpackr-extract, BullMQ's msgpack accelerator): a .node file
//   cannot be bundled, and each is loaded with a fallback when absent;
// - what a module loads by a name known only at run time (express's view engines, which no route uses),
//   through the require() that the banner gives the bundle.
// Files read at run time (redis-store's Lua scripts, the gateway's public/ pages, docs/openapi.yaml,
// prisma/migrations) are found where they were: every module keeps its own import.meta.url (the plugin
// below), so `new URL('./lua/', import.meta.url)` still names redis-store's dist/lua/, and every CommonJS
// one its own __dirname.
import { build } from 'esbuild';
import { readFile } from 'node:fs/promises';
import { dirname, relative, resolve } from 'node:path';

const app = process.cwd();
const outfile = resolve(app, 'dist/bundle/main.js');

/**
 * Gives each bundled module its own file's `import.meta.url`, and its own `__filename` and `__dirname` to a
 * CommonJS one that reads them, found at run time relative to the bundle: what they were unbundled.
 */
const ownFileNames = {
  name: 'own-file-names',
  setup(builder) {
    builder.onLoad({ filter: /\.(c|m)?js$/ }, async (args) => {
      let contents = await readFile(args.path, 'utf8');
      const usesUrl = contents.includes('import.meta.url');
      const usesPath = /\b__(dirname|filename)\b/.test(contents) && !/\b(const|let|var)\s+__(dirname|filename)\b/.test(contents);
      if (!usesUrl && !usesPath) return undefined;
      // Through the banner's __bundleUrl: `import.meta` in a CommonJS module would make it an ES module to esbuild.
      const own = `new URL(${JSON.stringify(relative(dirname(outfile), args.path).split('\\').join('/'))}, __bundleUrl)`;
      if (usesUrl) contents = contents.replaceAll('import.meta.url', `${own}.href`);
      if (usesPath) contents = `var __filename = __bundleFileURLToPath(${own}), __dirname = __bundleDirname(__filename);\n${contents}`;
      return { contents, loader: 'js' };
    });
  },
};

const result = await build({
  entryPoints: [resolve(app, 'dist/main.js')],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  // Resolved as Node resolves them unbundled: the workspace packages' builds (their `default` export,
  // dist/*.js), never their sources (the `@flashsale/source` condition is not given), `import` or
  // `require` by how each module asks.
  external: ['@prisma/client/runtime/query_compiler_*', 'msgpackr-extract'],
  // CommonJS dependencies call require(), __filename and __dirname, which an ES module does not have.
  banner: {
    js: [
      "import { createRequire as __bundleCreateRequire } from 'node:module';",
      "import { fileURLToPath as __bundleFileURLToPath } from 'node:url';",
      "import { dirname as __bundleDirname } from 'node:path';",
      'const __bundleUrl = import.meta.url;',
      'const require = __bundleCreateRequire(__bundleUrl);',
    ].join('\n'),
  },
  plugins: [ownFileNames],
  // Not minified, and no source map (tsc emits none either): a stack trace names the bundle's functions as
  // they were written, and each module's code follows a comment with its path.
  sourcemap: false,
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
});
const inputs = Object.keys(result.metafile.inputs).length;
const bytes = result.metafile.outputs[relative(process.cwd(), outfile).split('\\').join('/')]?.bytes;
console.log(`bundled ${inputs} modules into ${relative(process.cwd(), outfile)}${bytes ? ` (${Math.round(bytes / 1024)} KiB)` : ''}`);
