import type { Logger } from '@flashsale/runtime';

/** One Server-Sent Events listener: gets each topic's payload, already serialized. */
export type FeedListener = (topic: string, data: string) => void;

interface Topic {
  listeners: Set<FeedListener>;
  timer: NodeJS.Timeout;
  reading: boolean;
  /** The last payload, for a listener that joins between two reads. */
  last: string | undefined;
}

/**
 * The dashboard's live views, read once per interval per topic ('overview', 'sale:<id>') for all its
 * listeners, however many pages watch: ten operators on one sale cost what one costs. A topic is read
 * from its first listener to its last; a read still running when the next is due is not doubled up (a
 * slow MySQL gets one query at a time, not a queue of them). A failed read is pushed as `{ error }`, so a
 * page shows that the figures are stale rather than freezing on old ones.
 */
export class LiveFeed {
  private readonly topics = new Map<string, Topic>();

  constructor(
    private readonly read: (topic: string) => Promise<unknown>,
    private readonly intervalMs: number,
    private readonly logger: Logger,
  ) {}

  /** Listens to `topic` until the returned function is called. */
  subscribe(topic: string, listener: FeedListener): () => void {
    let entry = this.topics.get(topic);
    if (!entry) {
      const created: Topic = { listeners: new Set(), reading: false, last: undefined, timer: setInterval(() => void this.refresh(topic, created), this.intervalMs) };
      created.timer.unref();
      this.topics.set(topic, created);
      entry = created;
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
        clearInterval(current.timer);
        this.topics.delete(topic);
      }
    };
  }

  /** Topics being read now (each by one timer). */
  get activeTopics(): string[] {
    return [...this.topics.keys()];
  }

  close(): void {
    for (const topic of this.topics.values()) clearInterval(topic.timer);
    this.topics.clear();
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
