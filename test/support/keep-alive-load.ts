import { Agent, request } from 'node:http';
import { buyerToken } from '@flashsale/harness';

/** How one client connection of the load ended. */
export interface ConnectionEnd {
  /** Requests answered on the connection (every one it sent, unless `cut`). */
  answered: number;
  /** Answered after `markSignal()` was called. */
  answeredAfterSignal: number;
  statuses: Record<number, number>;
  /** The server closed it after a response carrying `Connection: close`: the clean end. */
  closedByServer: boolean;
  /** A request sent and never answered (the connection reset or closed under it): what must not happen. */
  cut?: string;
}

export interface KeepAliveLoad {
  /** Counts what is answered from now on as "after the signal". */
  markSignal(): void;
  /** Resolves once every connection has ended (the server closed it, or a request was cut). */
  ended: Promise<ConnectionEnd[]>;
  /** Ends the connections still open (the test's cleanup). */
  destroy(): void;
}

/**
 * `connections` clients, each holding one keep-alive connection and sending purchases on it back to
 * back (every purchase a new buyer), as a load balancer's pool of connections to one backend would. A
 * client never opens a second connection: once the server closes its connection after a response (or a
 * request is cut), it stops, as a balancer that has taken the backend out of rotation would.
 */
export function keepAliveLoad(url: string, saleId: number, connections: number, buyerPrefix: string): KeepAliveLoad {
  let afterSignal = false;
  const agents: Agent[] = [];
  let next = 0;
  const one = async (): Promise<ConnectionEnd> => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    agents.push(agent);
    const end: ConnectionEnd = { answered: 0, answeredAfterSignal: 0, statuses: {}, closedByServer: false };
    let sent = 0;
    for (;;) {
      const buyer = `${buyerPrefix}-${next++}`;
      // A request may only go on the connection it started with: a second one would be a new client.
      const outcome = await new Promise<{ status: number; close: boolean; reused: boolean } | { error: string; reused: boolean }>(
        (resolve) => {
          const req = request(
            `${url}/api/sales/${saleId}/purchase`,
            { method: 'POST', agent, headers: { authorization: `Bearer ${buyerToken(buyer)}`, 'content-length': '0' } },
            (res) => {
              res.resume();
              res.on('end', () =>
                resolve({ status: res.statusCode!, close: res.headers.connection === 'close', reused: req.reusedSocket }),
              );
            },
          );
          req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message, reused: req.reusedSocket }));
          req.end();
        },
      );
      if (sent > 0 && !outcome.reused) throw new Error('the load opened a second connection');
      sent += 1;
      if ('error' in outcome) {
        end.cut = outcome.error;
        return end;
      }
      end.answered += 1;
      if (afterSignal) end.answeredAfterSignal += 1;
      end.statuses[outcome.status] = (end.statuses[outcome.status] ?? 0) + 1;
      if (outcome.close) {
        end.closedByServer = true;
        return end;
      }
    }
  };
  const ended = Promise.all(Array.from({ length: connections }, one));
  return {
    markSignal: () => (afterSignal = true),
    ended,
    destroy: () => {
      for (const agent of agents) agent.destroy();
    },
  };
}

/** Polls `url` every `everyMs` (a fresh connection each time, as a health check does) until stopped. */
export function pollStatus(url: string, everyMs: number): { seen: { at: number; status: number | string; body: string }[]; stop(): void } {
  const seen: { at: number; status: number | string; body: string }[] = [];
  let stopped = false;
  void (async () => {
    while (!stopped) {
      try {
        const res = await fetch(url, { headers: { connection: 'close' } });
        seen.push({ at: Date.now(), status: res.status, body: await res.text() });
      } catch (error) {
        seen.push({ at: Date.now(), status: (error as Error).message, body: '' });
      }
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return { seen, stop: () => (stopped = true) };
}
