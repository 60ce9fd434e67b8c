import { execFile, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { freePort, purchaseBurst, spawnInGroup } from '@flashsale/harness';
import { saleKeys } from '@flashsale/redis-store';
import { startSystem, type System } from '../support/system.ts';
import { exportedNames, metricsPortOf, scrape } from '../support/metrics-text.ts';
import { until } from '../support/until.ts';

// infra/prometheus and infra/grafana checked by the real tools: promtool (Debian's `prometheus`
// package, installed by .ci/run), the names every query uses against what real processes export, and a
// real Prometheus server scraping real processes with the shipped jobs and rules.

const run = promisify(execFile);
const INFRA = resolve(import.meta.dirname, '../../infra');
const PROMETHEUS_DIR = join(INFRA, 'prometheus');

interface DashboardPanel {
  type: string;
  title: string;
  targets?: { expr: string }[];
}

/** The metric names a PromQL expression uses: this project's own, and Prometheus's `up`. */
function metricsOf(expr: string): string[] {
  // No label, function or keyword of these queries starts with flashsale_; `up` is a name only before `{`.
  const names = expr.match(/\bflashsale_[a-z0-9_]+/g) ?? [];
  return /(^|[^a-z_])up\s*\{/.test(expr) ? [...names, 'up'] : names;
}

let system: System;
let saleId: number;
beforeAll(async () => {
  system = await startSystem();
  saleId = await system.createSale({ stock: 10 });
});
afterAll(async () => {
  await system?.stop();
});

describe('the Prometheus configuration and rules', () => {
  it("pass promtool check config, check rules and the rules' unit tests (alerts.test.yml)", async () => {
    const config = await run('promtool', ['check', 'config', join(PROMETHEUS_DIR, 'prometheus.yml')]);
    const rules = await run('promtool', ['check', 'rules', join(PROMETHEUS_DIR, 'alerts.yml')]);
    // Run from its folder: the test file names alerts.yml relative to itself.
    const unit = await run('promtool', ['test', 'rules', 'alerts.test.yml'], { cwd: PROMETHEUS_DIR });

    expect(config.stdout).toContain('SUCCESS: 1 rule files found');
    expect(config.stdout).toContain('prometheus.yml is valid prometheus config file syntax');
    expect(rules.stdout).toContain('SUCCESS: 13 rules found');
    expect(unit.stdout).toContain('SUCCESS');
  });

  it('name in every rule and every dashboard panel only metrics the real processes export', async () => {
    const exported = new Set<string>();
    for (const process of [system.gateways[0]!, system.workers[0]!, system.reconciler!])
      for (const name of exportedNames(await scrape(process))) exported.add(name);
    const dashboard = JSON.parse(await readFile(join(INFRA, 'grafana/flashsale-dashboard.json'), 'utf8')) as {
      panels: DashboardPanel[];
      templating: { list: { definition?: string }[] };
    };
    const rules = (
      parse(await readFile(join(PROMETHEUS_DIR, 'alerts.yml'), 'utf8')) as { groups: { rules: { alert: string; expr: string }[] }[] }
    ).groups.flatMap((g) => g.rules);

    const used = new Map<string, string[]>();
    for (const panel of dashboard.panels.filter((p) => p.type !== 'row'))
      used.set(
        `panel "${panel.title}"`,
        (panel.targets ?? []).flatMap((t) => metricsOf(t.expr)),
      );
    for (const rule of rules) used.set(`alert ${rule.alert}`, metricsOf(rule.expr));
    for (const variable of dashboard.templating.list)
      if (variable.definition) used.set(`variable ${variable.definition}`, metricsOf(variable.definition));
    const unknown = [...used].flatMap(([where, names]) =>
      names.filter((name) => name !== 'up' && !exported.has(name)).map((name) => `${where}: ${name}`),
    );
    const empty = [...used].filter(([, names]) => names.length === 0).map(([where]) => where);

    expect(used.size).toBe(dashboard.panels.filter((p) => p.type !== 'row').length + rules.length + 1);
    expect(unknown).toEqual([]);
    expect(empty).toEqual([]);
  });
});

describe('a real Prometheus with the shipped jobs and rules', () => {
  let prometheus: ChildProcess | undefined;
  let dir: string | undefined;
  afterAll(async () => {
    prometheus?.kill('SIGKILL');
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('scrapes the gateway, the worker and the reconciler, evaluates every rule without error, and fires FlashsaleDeadLetters for a real dead letter', async () => {
    dir = await mkdtemp(join(tmpdir(), 'flashsale-prometheus-'));
    // The shipped file, its targets pointed at this test's processes and its intervals shortened.
    const config = parse(await readFile(join(PROMETHEUS_DIR, 'prometheus.yml'), 'utf8')) as {
      global: Record<string, string>;
      rule_files: string[];
      scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
    };
    const processOf: Record<string, number> = {
      'flashsale-gateway': metricsPortOf(system.gateways[0]!),
      'flashsale-worker': metricsPortOf(system.workers[0]!),
      'flashsale-reconciler': metricsPortOf(system.reconciler!),
    };
    expect(config.scrape_configs.map((job) => job.job_name).sort()).toEqual(Object.keys(processOf).sort());
    config.global = { scrape_interval: '250ms', scrape_timeout: '200ms', evaluation_interval: '250ms' };
    config.rule_files = config.rule_files.map((file) => join(PROMETHEUS_DIR, file));
    for (const job of config.scrape_configs) job.static_configs = [{ targets: [`127.0.0.1:${processOf[job.job_name]}`] }];
    await writeFile(join(dir, 'prometheus.yml'), stringify(config));
    const port = await freePort();
    prometheus = spawnInGroup(
      'prometheus',
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: 'ignore' },
    );
    const api = async <T>(path: string): Promise<T> => {
      const response = await fetch(`http://127.0.0.1:${port}${path}`).catch(() => undefined);
      return (response?.ok ? ((await response.json()) as { data: T }).data : undefined) as T;
    };
    const query = (promql: string) =>
      api<{ result: { metric: Record<string, string>; value: [number, string] }[] } | undefined>(
        `/api/v1/query?query=${encodeURIComponent(promql)}`,
      );

    // Every process up, and the worker's dead letters scraped at 0 before the first one.
    const up = await until(
      () => query('up'),
      (data) => data?.result.length === 3 && data.result.every((r) => r.value[1] === '1'),
    );
    expect(up!.result.map((r) => r.metric.job).sort()).toEqual(['flashsale-gateway', 'flashsale-reconciler', 'flashsale-worker']);
    await until(
      () => query('flashsale_worker_dead_letters_total{reason="MALFORMED_ENTRY"} == 0'),
      (data) => data?.result.length === 1,
    );
    const stock = await until(
      () => query(`flashsale_sale_stock_units{sale_id="${saleId}"}`),
      (data) => data?.result.length === 1,
    );
    expect(stock!.result[0]!.value[1]).toBe('10');

    // An entry no purchase can have written, then a purchase, whose work signal sends the worker to the
    // stream: the worker sets the entry aside as MALFORMED_ENTRY.
    await system.ctx.redis.xadd(saleKeys(system.ctx.config.REDIS_PREFIX, saleId).stream, '*', 'r', 'not-a-reservation');
    expect((await purchaseBurst(system.gateways[0]!.url, saleId, ['prometheus-buyer'])).accepted.size).toBe(1);

    const alerts = await until(
      () => api<{ alerts: { labels: Record<string, string>; state: string }[] } | undefined>('/api/v1/alerts'),
      (data) => data?.alerts.some((a) => a.labels.alertname === 'FlashsaleDeadLetters' && a.state === 'firing') === true,
    );
    expect(alerts!.alerts.filter((a) => a.state === 'firing').map((a) => [a.labels.alertname, a.labels.reason, a.labels.job])).toEqual([
      ['FlashsaleDeadLetters', 'MALFORMED_ENTRY', 'flashsale-worker'],
    ]);
    // Every rule has been evaluated against the real series, and none failed to.
    const rules = await api<{ groups: { rules: { name: string; health: string; lastError?: string }[] }[] }>('/api/v1/rules');
    const evaluated = rules.groups.flatMap((g) => g.rules);
    expect(evaluated).toHaveLength(13);
    expect(evaluated.filter((r) => r.health !== 'ok')).toEqual([]);
  });
});
