import { PIPELINE_PROCESSES, type PipelineResults, type PipelineSummary } from './pipeline.ts';

/** The pipeline part's tables, as docs/BENCHMARKS.md shows them. */
export function pipelineMarkdown(p: PipelineResults): string {
  const modes: [string, PipelineSummary][] = [
    ['closed loop, full speed', p.closed],
    [`open loop, ${p.open.targetRate ?? '?'}/s`, p.open],
  ];
  const lines = [
    `Load average ${p.loadAverage} at the start; ${p.rounds} rounds of ${p.seconds} s runs, wrk -t1 -c${p.connections}, medians. InnoDB: flush_log_at_trx_commit ${p.innodb.innodb_flush_log_at_trx_commit}, buffer pool ${Math.round(Number(p.innodb.innodb_buffer_pool_size) / 2 ** 20)} MiB, redo log ${Math.round(Number(p.innodb.innodb_log_file_size) / 2 ** 20)} MiB, binlog ${p.innodb.log_bin === '1' ? `on (sync_binlog ${p.innodb.sync_binlog})` : 'off'}.`,
    '',
    '| run | accepted/s | sustained orders/s | backlog at end | drain s | p50 ms | p99 ms | ' + PIPELINE_PROCESSES.join(' | ') + ' | pipeline us/order | with wrk | redo B/order |',
    '|---|---|---|---|---|---|---|' + PIPELINE_PROCESSES.map(() => '---').join('|') + '|---|---|---|',
    ...modes.map(
      ([name, s]) =>
        `| ${name} | ${s.acceptRate} | ${s.sustainedRate} | ${s.backlogAtEnd} | ${s.drainSeconds} | ${s.p50} | ${s.p99} | ${PIPELINE_PROCESSES.map((proc) => s.cpuUsPerOrder[proc]).join(' | ')} | **${s.cpuUsPerOrder.pipeline}** | ${s.cpuUsPerOrder.total} | ${s.redoBytesPerOrder}${s.binlogBytesPerOrder ? ` + binlog ${s.binlogBytesPerOrder}` : ''} |`,
    ),
    '',
    `The gateway alone (no worker reads its prefix), same rounds: ${p.gatewayAlone.rps} req/s, p50 ${p.gatewayAlone.p50} ms, p99 ${p.gatewayAlone.p99} ms, ${p.gatewayAlone.cpuUsPerRequest} us CPU/request.`,
    '',
    `Redis, closed loop, the median run's commands by server time per order: ${p.closed.redis.slice(0, 8).map((c) => `${c.command} ${c.callsPerOrder} calls ${c.usPerOrder} us`).join('; ')}.`,
  ];
  return lines.join('\n');
}
