import { readCommandLine, UsageError } from '@flashsale/config';

/** The soak's command line, parsed (pure). */
export interface SoakOptions {
  /** Seconds of load. */
  seconds: number;
  /** Purchases per second (open loop, the Node pacer); undefined: closed loop with wrk. */
  rate: number | undefined;
  connections: number;
  sampleSeconds: number;
  /** The most requests the pacer lets wait at once (--rate only); beyond, arrivals are dropped and counted. */
  maxInFlight: number;
  /** Where the report goes. */
  outDir: string;
  /** Keep the run's database and Redis keys afterwards. */
  keep: boolean;
}

const USAGE = `usage: npm run soak -- [--minutes N | --seconds N] [--rate R] [--connections C] [--sample-seconds S] [--max-in-flight M] [--out DIR] [--keep]

The whole system under sustained load (one gateway, two workers, a reconciler, every request a new
buyer of one sale), on a database and a Redis prefix of the run's own; then the drain, the ledger check
and an HTML report. Exit 1 when the ledger check fails.

  --minutes N         minutes of load (default 10; fractions allowed)
  --seconds N         seconds of load instead (short runs, tests)
  --rate R            R purchases a second, open loop (a Node pacer); without it: closed loop, wrk -t1 -c<C>
  --connections C     connections of wrk or the pacer (default 64)
  --sample-seconds S  seconds between samples (default 5)
  --max-in-flight M   --rate only: requests allowed to wait at once before arrivals are dropped (default 2048)
  --out DIR           where the report goes (default loadtest/results)
  --keep              keep the run's database and Redis keys (dropped by default)`;

/** The soak's command line (config's parseCommandLine takes it). */
export const SOAK_COMMAND = {
  usage: USAGE,
  options: {
    minutes: { type: 'string' },
    seconds: { type: 'string' },
    rate: { type: 'string' },
    connections: { type: 'string' },
    'sample-seconds': { type: 'string' },
    'max-in-flight': { type: 'string' },
    out: { type: 'string', default: 'loadtest/results' },
    keep: { type: 'boolean', default: false },
  },
} as const;

type SoakValues = Exclude<ReturnType<typeof readCommandLine<(typeof SOAK_COMMAND)['options']>>, 'help'>['values'];

/** The soak's options from its parsed command line (pure); throws UsageError on a value it cannot take. */
export function soakOptionsOf(values: SoakValues): SoakOptions {
  const number = (name: keyof SoakValues, min: number, fallback: number, above = false): number => {
    const text = values[name] as string | undefined;
    if (text === undefined) return fallback;
    const v = Number(text);
    if (!Number.isFinite(v) || (above ? v <= min : v < min))
      throw new UsageError(`--${name} must be a number ${above ? 'more than' : 'of at least'} ${min} (got "${text}")`);
    return v;
  };
  if (values.minutes !== undefined && values.seconds !== undefined) throw new UsageError('--minutes and --seconds: give one');
  const seconds = values.seconds !== undefined ? number('seconds', 1, 600) : number('minutes', 0, 10, true) * 60;
  return {
    // wrk takes whole seconds.
    seconds: Math.max(1, Math.round(seconds)),
    rate: values.rate === undefined ? undefined : number('rate', 0, 0, true),
    connections: Math.round(number('connections', 1, 64)),
    sampleSeconds: number('sample-seconds', 0.5, 5),
    maxInFlight: Math.round(number('max-in-flight', 1, 2048)),
    outDir: values.out,
    keep: values.keep,
  };
}

/** Parses the soak's arguments (pure): 'help' for --help, else the options; throws UsageError on a bad one. */
export function parseSoakArgs(args: readonly string[]): SoakOptions | 'help' {
  const parsed = readCommandLine(SOAK_COMMAND, args);
  return parsed === 'help' ? 'help' : soakOptionsOf(parsed.values);
}

/**
 * Stock for the whole run: more than the box could accept at 100,000 a second (about three times what
 * the gateway alone answers in the benchmark), at least a million, at most the API's 10^9.
 */
export function stockFor(seconds: number): number {
  return Math.min(1_000_000_000, Math.max(1_000_000, Math.ceil(seconds * 100_000)));
}
