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

export const USAGE = `usage: npm run soak -- [--minutes N | --seconds N] [--rate R] [--connections C] [--sample-seconds S] [--max-in-flight M] [--out DIR] [--keep]

  --minutes N         minutes of load (default 10; fractions allowed)
  --seconds N         seconds of load instead (short runs, tests)
  --rate R            R purchases a second, open loop (a Node pacer); without it: closed loop, wrk -t1 -c<C>
  --connections C     connections of wrk or the pacer (default 64)
  --sample-seconds S  seconds between samples (default 5)
  --max-in-flight M   --rate only: requests allowed to wait at once before arrivals are dropped (default 2048)
  --out DIR           where the report goes (default loadtest/results)
  --keep              keep the run's database and Redis keys (dropped by default)`;

/** Parses the soak's arguments; throws an Error with a message (and the usage) on a bad one. */
export function parseSoakArgs(args: readonly string[]): SoakOptions {
  const options: SoakOptions = { seconds: 600, rate: undefined, connections: 64, sampleSeconds: 5, maxInFlight: 2048, outDir: 'loadtest/results', keep: false };
  let minutes: number | undefined;
  let seconds: number | undefined;
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i]!;
    const [name, inline] = arg.startsWith('--') && arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const value = (): string => {
      const v = inline ?? args[++i];
      if (v === undefined) throw new Error(`${name} needs a value\n${USAGE}`);
      return v;
    };
    const positive = (min = Number.MIN_VALUE): number => {
      const text = value();
      const v = Number(text);
      if (!Number.isFinite(v) || v < min) throw new Error(`${name} must be a number of at least ${min === Number.MIN_VALUE ? 'more than 0' : min} (got "${text}")\n${USAGE}`);
      return v;
    };
    switch (name) {
      case '--minutes':
        minutes = positive();
        break;
      case '--seconds':
        seconds = positive(1);
        break;
      case '--rate':
        options.rate = positive();
        break;
      case '--connections':
        options.connections = Math.round(positive(1));
        break;
      case '--sample-seconds':
        options.sampleSeconds = positive(0.5);
        break;
      case '--max-in-flight':
        options.maxInFlight = Math.round(positive(1));
        break;
      case '--out':
        options.outDir = value();
        break;
      case '--keep':
        options.keep = true;
        break;
      case '--help':
      case '-h':
        throw new Error(USAGE);
      default:
        throw new Error(`unknown argument ${arg}\n${USAGE}`);
    }
  }
  if (minutes !== undefined && seconds !== undefined) throw new Error(`--minutes and --seconds: give one\n${USAGE}`);
  if (seconds !== undefined) options.seconds = seconds;
  else if (minutes !== undefined) options.seconds = minutes * 60;
  // wrk takes whole seconds.
  options.seconds = Math.max(1, Math.round(options.seconds));
  return options;
}

/**
 * Stock for the whole run: more than the box could accept at 100,000 a second (about three times what
 * the gateway alone answers in the benchmark), at least a million, at most the API's 10^9.
 */
export function stockFor(seconds: number): number {
  return Math.min(1_000_000_000, Math.max(1_000_000, Math.ceil(seconds * 100_000)));
}
