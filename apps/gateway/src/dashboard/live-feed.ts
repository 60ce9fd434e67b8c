import type { Logger } from '@flashsale/runtime';

/** One Server-Sent Events listener: gets each topic's payload, already serialized. */
export type FeedListener = (topic: string, data: string) => void;

interface Topic {
  listeners: Set<FeedListener>;
  reading: boolean;
  /** The last payload, for a listener that joins between two reads. */
  last: string | undefined;
}

/**
 * The dashboard's live views, read once per interval per topic ('overview', 'sale:<id>') for all its
 * listeners, however many pages watch: ten operators on one sale cost what one costs, and the work of a
 * tick grows with the topics watched, never with the pages. One timer drives every topic (not one per
 * topic, each firing at its own phase), so a tick's reads leave together and their payloads reach the
 * streams close together: dashboard.route.ts writes a stream's events of one turn at once and lets the
 * streams of one session share a session read. Each payload is serialized once, for every listener. A topic is read from its first
 * listener to its last (its first read at once, then at the feed's ticks); a read still running when the
 * next is due is not doubled up (a slow MySQL gets one query at a time, not a queue of them). A failed
 * read is pushed as `{ error }`, so a page shows that the figures are stale rather than freezing on old
 * ones.
 */
export class LiveFeed {
  private readonly topics = new Map<string, Topic>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly read: (topic: string) => Promise<unknown>,
    private readonly intervalMs: number,
    private readonly logger: Logger,
  ) {}

  /** Listens to `topic` until the returned function is called. */
  subscribe(topic: string, listener: FeedListener): () => void {
    let entry = this.topics.get(topic);
    if (!entry) {
      const created: Topic = { listeners: new Set(), reading: false, last: undefined };
      this.topics.set(topic, created);
      entry = created;
      this.startTicking();
      void this.refresh(topic, created);
    } else if (entry.last !== undefined) {
      listener(topic, entry.last);
    }
    entry.listeners.add(listener);
    return () => {
      const current = this.topics.get(topic);
      if (!current) return;
      current.listeners.delete(listener);
      if (current.listeners.size === 0) {
        this.topics.delete(topic);
        if (this.topics.size === 0) this.stopTicking();
      }
    };
  }

  /** Topics being read now (all by the feed's one timer). */
  get activeTopics(): string[] {
    return [...this.topics.keys()];
  }

  close(): void {
    this.stopTicking();
    this.topics.clear();
  }

  private startTicking(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      for (const [topic, entry] of this.topics) void this.refresh(topic, entry);
    }, this.intervalMs);
    this.timer.unref();
  }

  private stopTicking(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async refresh(topic: string, entry: Topic): Promise<void> {
    if (entry.reading) return;
    entry.reading = true;
    let data: string;
    try {
      data = JSON.stringify(await this.read(topic));
    } catch (error) {
      this.logger.warn({ err: error, topic }, 'dashboard view not read this time');
      data = JSON.stringify({ error: (error as Error).message || 'the view could not be read' });
    } finally {
      entry.reading = false;
    }
    if (this.topics.get(topic) !== entry) return;
    entry.last = data;
    for (const listener of entry.listeners) listener(topic, data);
  }
}
