import { PIPELINE_PROCESSES } from './pipeline-run.ts';
import type { ContenderResults, PipelineResults } from './pipeline.ts';

const row = (name: string, s: ContenderResults['closed']) =>
  `| ${name} | ${s.acceptRate} | ${s.sustainedRate} | ${s.backlogAtEnd} | ${s.drainSeconds} | ${s.p50} | ${s.p99} | ${PIPELINE_PROCESSES.map((proc) => s.cpuUsPerOrder[proc]).join(' | ')} | **${s.cpuUsPerOrder.pipeline}** | ${s.cpuUsPerOrder.total} | ${s.redoBytesPerOrder}${s.binlogBytesPerOrder ? ` + binlog ${s.binlogBytesPerOrder}` : ''} |`;

const rows = (label: string, c: ContenderResults) => [
  row(`${label} closed loop, full speed`, c.closed),
  row(`${label} open loop, ${c.open.targetRate ?? '?'}/s`, c.open),
];

const alone = (label: string, c: ContenderResults) =>
  `${label}the gateway alone (no worker reads its prefix), same rounds: ${c.gatewayAlone.rps} req/s, p50 ${c.gatewayAlone.p50} ms, p99 ${c.gatewayAlone.p99} ms, ${c.gatewayAlone.cpuUsPerRequest} us CPU/request.`;

/** The pipeline part's tables, as docs/BENCHMARKS.md shows them. */
export function pipelineMarkdown(p: PipelineResults): string {
  const labels = p.against ? { mine: `\`${p.commit}\``, theirs: `\`${p.against.commit}\`` } : { mine: '', theirs: '' };
  const lines = [
    `Load average ${p.loadAverage} at the start; ${p.rounds} rounds of ${p.seconds} s runs, wrk -t1 -c${p.connections}, medians; CPU in us per order committed, from /proc, over the load and the drain after it. InnoDB: flush_log_at_trx_commit ${p.innodb.innodb_flush_log_at_trx_commit}, buffer pool ${Math.round(Number(p.innodb.innodb_buffer_pool_size) / 2 ** 20)} MiB, redo log ${Math.round(Number(p.innodb.innodb_log_file_size) / 2 ** 20)} MiB, binlog ${p.innodb.log_bin === '1' ? `on (sync_binlog ${p.innodb.sync_binlog})` : 'off'}.`,
    '',
    '| run | accepted/s | sustained orders/s | backlog at end | drain s | p50 ms | p99 ms | ' +
      PIPELINE_PROCESSES.join(' | ') +
      ' | pipeline us/order | with wrk | redo B/order |',
    '|---|---|---|---|---|---|---|' + PIPELINE_PROCESSES.map(() => '---').join('|') + '|---|---|---|',
    ...(p.against ? rows(labels.theirs, p.against) : []),
    ...rows(labels.mine, p),
    '',
    ...(p.against ? [`${alone(`${labels.theirs}: `, p.against)} ${alone(`${labels.mine}: `, p)}`, ''] : [alone('', p), '']),
    ...(p.against
      ? [
          `Medians of each round's ratios, ${labels.mine} against ${labels.theirs}: CPU per order ${p.against.ratios.closedCpu}x lower closed loop, ${p.against.ratios.openCpu}x lower open loop; sustained rate ${p.against.ratios.closedRate}x closed loop, ${p.against.ratios.openRate}x open loop (same arrival rate for both); gateway alone ${p.against.ratios.aloneRps}x.`,
          '',
        ]
      : []),
    `Redis (${labels.mine || 'this run'}), the median run's commands by server time per order, closed loop: ${p.closed.redis
      .slice(0, 8)
      .map((c) => `${c.command} ${c.callsPerOrder} calls ${c.usPerOrder} us`)
      .join('; ')}; open loop: ${p.open.redis
      .slice(0, 8)
      .map((c) => `${c.command} ${c.callsPerOrder} calls ${c.usPerOrder} us`)
      .join('; ')}.`,
  ];
  return lines.join('\n');
}
