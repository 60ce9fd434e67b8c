import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configSchema } from './config.ts';
import { configProperties, renderConfigReference } from './config-reference.ts';

const FILE = new URL('../../../docs/configuration.md', import.meta.url);

describe('the configuration reference (docs/configuration.md)', () => {
  it('is what the schema gives today: run npm run docs:config after changing the schema', () => {
    expect(readFileSync(FILE, 'utf8')).toBe(renderConfigReference());
  });

  it('describes every variable of the schema', () => {
    const undescribed = configProperties()
      .filter(([, property]) => !property.description?.trim())
      .map(([name]) => name);

    expect(undescribed).toEqual([]);
    expect(
      configProperties()
        .map(([name]) => name)
        .sort(),
    ).toEqual(Object.keys(configSchema.shape).sort());
  });

  it('states the default and the range the schema enforces', () => {
    const reference = renderConfigReference();

    expect(reference).toContain("| `PORT` | `3000` | 0..65535 | The gateway's HTTP port (0 picks a free one). |");
    expect(reference).toContain('| `LOG_LEVEL` | `info` | `fatal`, `error`, `warn`, `info`, `debug`, `trace`, `silent` |');
    expect(reference).toMatch(
      /\| `SHUTDOWN_DRAIN_MS` \| 5000 in production \(at most half of `SHUTDOWN_TIMEOUT_MS`\), else 0 \| 0\.\.600000 \|/,
    );
  });
});
