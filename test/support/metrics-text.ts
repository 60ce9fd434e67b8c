import type { AppProcess } from '@flashsale/harness';

/** The metrics port a spawned process logged at start (gateway: metricsPort; worker, reconciler: port). */
export function metricsPortOf(process: AppProcess): number {
  const line = process.logs.find((l) => l.msg === 'gateway listening' || l.msg === 'worker started' || l.msg === 'reconciler started');
  const port = line?.msg === 'gateway listening' ? line.metricsPort : line?.port;
  if (typeof port !== 'number') throw new Error('the process logged no metrics port');
  return port;
}

/** GET /metrics of a process, as Prometheus text. */
export async function scrape(process: AppProcess): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${metricsPortOf(process)}/metrics`);
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
  return response.text();
}

/** The value of one series, written as in the text (`name{label="v"}`), or undefined when absent. */
export function sampleOf(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Every series line of the text whose labels include `label="value"`. */
export function seriesWithLabel(text: string, label: string, value: string): string[] {
  return text.split('\n').filter((l) => !l.startsWith('#') && l.includes(`${label}="${value}"`));
}

/**
 * The metric names a process exports, from its `# TYPE` lines, with the series names a histogram or
 * summary adds (`_bucket`, `_sum`, `_count`): every name a query may use. A labelled metric is declared
 * even before it has a series, so this does not depend on what has happened yet.
 */
export function exportedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const match = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (!match) continue;
    const [, name, type] = match as unknown as [string, string, string];
    names.add(name);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(name + suffix);
  }
  return names;
}
