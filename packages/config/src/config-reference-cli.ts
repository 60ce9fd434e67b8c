import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseCommandLine } from './command-line.ts';
import { renderConfigReference } from './config-reference.ts';

const { values } = parseCommandLine({
  usage: `usage: npm run docs:config -- [--check]

Writes docs/configuration.md, the reference of every environment variable, from the configuration
schema (packages/config/src/config.ts: each variable's default, allowed values and .describe()).

  --check   write nothing; exit 1 if docs/configuration.md differs from what the schema gives`,
  options: { check: { type: 'boolean' } },
});

const FILE = fileURLToPath(new URL('../../../docs/configuration.md', import.meta.url));
const reference = renderConfigReference();
let current = '';
try {
  current = readFileSync(FILE, 'utf8');
} catch {
  // No file yet: it is stale, and written below unless --check.
}

if (values.check) {
  if (current !== reference) {
    process.stderr.write('docs/configuration.md is stale: run npm run docs:config\n');
    process.exit(1);
  }
  process.stdout.write('docs/configuration.md is up to date\n');
} else {
  writeFileSync(FILE, reference);
  process.stdout.write(`${current === reference ? 'unchanged' : 'wrote'} docs/configuration.md\n`);
}
