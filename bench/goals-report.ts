import { runLine } from './part-context.ts';
import type { PipelineResults } from './pipeline.ts';
import type { ReadyResults } from './ready.ts';
import type { ReserveSummary, RunInfo } from './summary.ts';

/** What the goals are read from: the parts of a run (bench/report.ts's BenchResults) that measure them. */
export interface GoalFigures extends RunInfo {
  paths?: { accept: { roundRatios?: number[]; controlRoundRatios?: number[]; ratios: { gatewayToAuthenticated: number } } };
  script?: { accept: ReserveSummary };
  pipeline?: PipelineResults;
  ready?: ReadyResults;
}

/** The speed goals one run is read against, where it measured every figure they need. */
export const SPEED_GOALS = {
  /** µs of Redis time in the reserve script per order, the whole pipeline's closed loop (INFO commandstats' evalsha). */
  scriptUsInPipeline: 10,
  /** The gateway's accepts over the authenticated baseline's, in every round. */
  acceptRatioEveryRound: 0.9,
  /** µs of CPU per order across the pipeline's processes, closed loop (wrk not counted). */
  pipelineCpuUs: 100,
  /** ms from spawn to ready of each built role. */
  builtReadyMs: 1000,
} as const;

const met = (ok: boolean) => (ok ? 'met' : '**not met**');

/**
 * The section of a run of the purchase, script, pipeline and ready parts together: each speed goal beside
 * the figure that answers it, from the same run. Undefined for a run without all four.
 */
export function goalsMarkdown(r: GoalFigures): string | undefined {
  const { paths, script, pipeline, ready } = r;
  if (!paths || !script || !pipeline || !ready) return undefined;
  const evalsha = pipeline.closed.redis.find((cost) => cost.command === 'evalsha' || cost.command === 'eval');
  const inPipeline = evalsha ? evalsha.usPerOrder : Number.NaN;
  const rounds = paths.accept.roundRatios ?? [];
  const control = paths.accept.controlRoundRatios;
  const cpu = pipeline.closed.cpuUsPerOrder;
  const roles = Object.entries(ready.build) as [string, { medianMs: number }][];
  const source = Object.entries(ready.source) as [string, { medianMs: number }][];
  const slowestBuilt = Math.max(...roles.map(([, role]) => role.medianMs));
  const byProcess = Object.entries(cpu)
    .filter(([name]) => name !== 'pipeline' && name !== 'total' && name !== 'wrk')
    .map(([name, us]) => `${name} ${us}`)
    .join(', ');
  return [
    runLine(r),
    '',
    '| goal | this run | |',
    '|---|---|---|',
    `| the reserve script's Redis time per order, pipeline closed loop ≤ ${SPEED_GOALS.scriptUsInPipeline} µs | ${inPipeline.toFixed(2)} µs (alone, pipelined, no HTTP: ${script.accept.redisScriptUs.toFixed(2)} µs) | ${met(inPipeline <= SPEED_GOALS.scriptUsInPipeline)} |`,
    `| accept / authenticated baseline ≥ ${SPEED_GOALS.acceptRatioEveryRound} in every round | ${rounds.map((value) => value.toFixed(2)).join(', ')} (median ${paths.accept.ratios.gatewayToAuthenticated.toFixed(2)})${control ? `; control (the baseline against a copy of itself): ${control.map((value) => value.toFixed(2)).join(', ')}` : ''} | ${met(rounds.length > 0 && rounds.every((value) => value >= SPEED_GOALS.acceptRatioEveryRound))} |`,
    `| CPU per order across the pipeline, closed loop ≤ ${SPEED_GOALS.pipelineCpuUs} µs | ${cpu.pipeline} µs (${byProcess}) | ${met(cpu.pipeline <= SPEED_GOALS.pipelineCpuUs)} |`,
    `| built roles ready ≤ ${SPEED_GOALS.builtReadyMs} ms from spawn | ${roles.map(([role, { medianMs }]) => `${role} ${medianMs}`).join(', ')} ms (from source: ${source.map(([role, { medianMs }]) => `${role} ${medianMs}`).join(', ')} ms) | ${met(slowestBuilt <= SPEED_GOALS.builtReadyMs)} |`,
  ].join('\n');
}
