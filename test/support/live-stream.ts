/** A dashboard session opened over HTTP, as the page opens one: its cookie and its CSRF token. */
export interface DashboardSession {
  cookie: string;
  csrfToken: string;
}

/** Signs in to the dashboard of the gateway at `baseUrl` with the admin token. */
export async function signInSession(baseUrl: string, adminToken: string): Promise<DashboardSession> {
  const res = await fetch(`${baseUrl}/admin/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token: adminToken }),
  });
  if (res.status !== 200) throw new Error(`sign-in failed: ${res.status}`);
  const cookie = /^([^;]+)/.exec(res.headers.get('set-cookie') ?? '')![1]!;
  const { csrfToken } = (await res.json()) as { csrfToken: string };
  return { cookie, csrfToken };
}

/** Signs a session out, as the page's button does. */
export async function signOutSession(baseUrl: string, session: DashboardSession): Promise<number> {
  const res = await fetch(`${baseUrl}/admin/session`, {
    method: 'DELETE',
    headers: { cookie: session.cookie, 'x-csrf-token': session.csrfToken },
  });
  return res.status;
}

/** An open GET /admin/live, read as it arrives: each event's name and data, and when it ended. */
export interface LiveStream {
  status: number;
  /** The problem's code when the stream was refused. */
  code: string | undefined;
  events: { event: string; data: string; at: number }[];
  /** Resolves when the server ended the stream (or it was closed here). */
  ended: Promise<number>;
  close(): void;
}

/** Opens a live stream with a session's cookie (`query`: `?sale=<id>` or nothing). */
export async function openLiveStream(baseUrl: string, session: DashboardSession, query = ''): Promise<LiveStream> {
  const abort = new AbortController();
  const res = await fetch(`${baseUrl}/admin/live${query}`, { headers: { cookie: session.cookie }, signal: abort.signal });
  const events: LiveStream['events'] = [];
  if (res.status !== 200) {
    const body = (await res.json().catch(() => ({}))) as { code?: string };
    return { status: res.status, code: body.code, events, ended: Promise.resolve(Date.now()), close: () => undefined };
  }
  const ended = (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let boundary: number;
        while ((boundary = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, boundary);
          buffer = buffer.slice(boundary + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (event !== undefined && data !== undefined) events.push({ event, data, at: Date.now() });
        }
      }
    } catch {
      // Aborted here: the stream is over all the same.
    }
    return Date.now();
  })();
  return { status: 200, code: undefined, events, ended, close: () => abort.abort() };
}
