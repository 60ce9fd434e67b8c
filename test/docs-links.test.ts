import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import GithubSlugger from 'github-slugger';
import { describe, expect, it } from 'vitest';

/**
 * Every relative link in the README, the docs (runbooks included) and the changelog resolves: the file it names exists, and
 * the heading its `#anchor` names exists in that file, as GitHub renders the anchor (github-slugger,
 * GitHub's own algorithm). A file moved or a heading renamed fails here, not for the reader.
 */
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const DOCS = [
  'README.md',
  'CHANGELOG.md',
  ...readdirSync(join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** The anchors GitHub gives the headings of a Markdown file (fenced code left out). */
function anchorsOf(file: string): Set<string> {
  const slugger = new GithubSlugger();
  const text = readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  return new Set([...text.matchAll(/^#{1,6} +(.+?) *#* *$/gm)].map(([, heading]) => slugger.slug(heading!.replace(/`/g, ''))));
}

/** The relative links of a Markdown file (`[text](target)`, images included; code spans and fences left out). */
function linksOf(file: string): string[] {
  const text = readFileSync(file, 'utf8')
    .replace(/^```[\s\S]*?^```/gm, '')
    .replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)(?: "[^"]*")?\)/g)]
    .map(([, target]) => target!)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

describe('links in the docs', () => {
  it.each(DOCS)('every relative link in %s resolves, to a file and a heading', (doc) => {
    const from = join(ROOT, doc);
    const broken = linksOf(from).filter((link) => {
      const [path, anchor] = link.split('#') as [string, string | undefined];
      const target = path === '' ? from : resolve(dirname(from), decodeURIComponent(path));
      if (!existsSync(target)) return true;
      if (anchor === undefined || statSync(target).isDirectory() || !target.endsWith('.md')) return false;
      return !anchorsOf(target).has(decodeURIComponent(anchor));
    });
    expect(broken, `broken links in ${relative(ROOT, from)}`).toEqual([]);
  });
});

describe('links in the alert rules', () => {
  it('every docs/ path an alert names (infra/prometheus/alerts.yml) resolves, to a file and a heading', () => {
    const rules = readFileSync(join(ROOT, 'infra/prometheus/alerts.yml'), 'utf8');
    const broken = [...rules.matchAll(/docs\/[\w/.-]+\.md(?:#[\w-]+)?/g)]
      .map(([link]) => link)
      .filter((link) => {
        const [path, anchor] = link.split('#') as [string, string | undefined];
        const target = join(ROOT, path);
        return !existsSync(target) || (anchor !== undefined && !anchorsOf(target).has(anchor));
      });
    expect(broken).toEqual([]);
  });
});
