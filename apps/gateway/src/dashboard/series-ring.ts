/** Points of a ring as the page draws them: times (epoch ms) and, per series, one value or null per time. */
export interface SeriesPoints {
  t: number[];
  series: Record<string, (number | null)[]>;
}

/**
 * A fixed-size history of time series: the last `capacity` points, each a time and a value per named
 * series, in typed arrays allocated once, so its memory is known in advance and never grows:
 * (1 + series) x capacity x 8 bytes. A series is added on its first value, up to `maxSeries` (the names
 * come from code, never from clients; past the limit a new name is dropped rather than grow the ring).
 */
export class SeriesRing {
  private readonly times: Float64Array;
  private readonly columns = new Map<string, Float64Array>();
  /** Where the next point goes, and how many points are held. */
  private next = 0;
  private size = 0;

  constructor(
    readonly capacity: number,
    private readonly maxSeries: number,
  ) {
    this.times = new Float64Array(capacity);
  }

  push(at: number, values: Record<string, number | null>): void {
    for (const [name, value] of Object.entries(values)) {
      if (value === null || this.columns.has(name) || this.columns.size >= this.maxSeries) continue;
      this.columns.set(name, new Float64Array(this.capacity).fill(Number.NaN));
    }
    this.times[this.next] = at;
    for (const [name, column] of this.columns) column[this.next] = values[name] ?? Number.NaN;
    this.next = (this.next + 1) % this.capacity;
    this.size = Math.min(this.size + 1, this.capacity);
  }

  /** Time of the newest point, or undefined when empty. */
  get lastAt(): number | undefined {
    return this.size === 0 ? undefined : this.times[(this.next - 1 + this.capacity) % this.capacity];
  }

  /** The newest point's values, or undefined when empty. */
  latest(): Record<string, number | null> | undefined {
    if (this.size === 0) return undefined;
    const at = (this.next - 1 + this.capacity) % this.capacity;
    return Object.fromEntries([...this.columns].map(([name, column]) => [name, valueOf(column[at]!)]));
  }

  /** The points held, oldest first; with `last`, only the newest `last` of them. */
  points(last = this.size): SeriesPoints {
    const count = Math.min(last, this.size);
    const first = (this.next - count + this.capacity) % this.capacity;
    const index = (i: number) => (first + i) % this.capacity;
    const t = Array.from({ length: count }, (_, i) => this.times[index(i)]!);
    const series = Object.fromEntries(
      [...this.columns].map(([name, column]) => [name, Array.from({ length: count }, (_, i) => valueOf(column[index(i)]!))]),
    );
    return { t, series };
  }

  /** Bytes its arrays hold now; at most (1 + maxSeries) x capacity x 8. */
  get bytes(): number {
    return (1 + this.columns.size) * this.capacity * Float64Array.BYTES_PER_ELEMENT;
  }
}

const valueOf = (stored: number) => (Number.isNaN(stored) ? null : stored);
