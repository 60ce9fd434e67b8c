/**
 * The door-bots part (BENCH_PARTS=door-bots): honest buyers against a farm of accounts, through a real
 * gateway and worker, on queued sales at the default settings. H honest buyers join before
 * the start, each from an address of their own, poll honouring Retry-After, buy when admitted and pay;
 * M = 3H farm accounts join and never come back. Scenarios, each on a sale of its own:
 * - the honest crowd alone (the time to sell out the farm is judged against);
 * - with the farm joining from one address (paced by the join budget) and from many;
 * - with a claim required (`requireClaim`: the honest buyers are known customers, the farm's accounts
 *   are not): the farm must get no place;
 * - with a proof of work at join (`challenge` pow, then auto): the CPU the farm pays per account, its
 *   search run as fast as Node runs it (solveDoorChallenge: node:crypto, a microsecond a hash).
 * Addresses are the X-Forwarded-For the gateway trusts (TRUST_PROXY=1). Logs its figures as it goes and
 * returns them (kept in results.json with --record; docs/performance.md quotes a run).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { paymentEventRequest, signBuyerTokens, solveDoorChallenge, spawnWorker, type DoorChallenge } from '@flashsale/harness';
import { redisNow, saleKeys } from '@flashsale/redis-store';
import type { PartContext } from './part-context.ts';
import { startGatewayProcess } from './servers.ts';

const HONEST = 40;
const FARM = 3 * HONEST;
const STOCK = 10;
/** The farm's one address (scenario "one address"); everyone else has an address of their own. */
const FARM_ADDRESS = '198.51.100.7';
/** However slow the box: a sale that does not sell out in this long fails the part. */
const SALE_DEADLINE_MS = 300_000;

type FarmShape = 'none' | 'one address' | 'many addresses';

interface Scenario {
  name: string;
  farm: FarmShape;
  requireClaim?: boolean;
  challenge?: 'pow' | 'auto';
}

export interface DoorBotsScenario {
  name: string;
  /** Seconds from the start to the last unit's 202 (null: not sold out by the deadline). */
  soldOutSeconds: number | null;
  /** Seconds from the start until every honest buyer had their answer (a unit, or sold out). */
  honestDoneSeconds: number;
  honestUnits: number;
  /** Farm accounts the door holds a place for (in the sale's queue). */
  farmPlaces: number;
  /** Farm accounts answered 200 but never queued (the shadow queue), and refused (their answers' codes). */
  farmShadowed: number;
  farmRefused: Record<string, number>;
  /** Turns given, and turns that ended unused, when the last honest buyer was answered. */
  turnsGiven: number;
  turnsAbandoned: number;
  noShowRate: number;
  /** The challenge's maxnumber the farm was given (first and last account), and what it cost per account. */
  challenge?: { first: number; last: number; cpuMsPerAccount: number; wallMsPerAccount: number };
}

export interface DoorBotsResults {
  honest: number;
  farm: number;
  stock: number;
  scenarios: DoorBotsScenario[];
}

export async function doorBotsPart(part: PartContext): Promise<DoorBotsResults> {
  part.log(
    `door-bots: ${HONEST} honest buyers, ${FARM} farm accounts that never come back, ${STOCK} units a sale, the door's default settings`,
  );
  const env = {
    ...part.env,
    TRUST_PROXY: '1',
    MAX_CONNECTIONS_PER_ADDRESS: '0',
    // The join budgets at their defaults (the harness lifts the per-address one for its crowds).
    QUEUE_JOINS_PER_ADDRESS_PER_SECOND: '20',
  };
  const gateway = await startGatewayProcess(env, 1);
  part.stops.push(() => gateway.stop());
  const worker = await spawnWorker(part.env);
  part.stops.push(() => worker.kill('SIGTERM'));

  const scenarios: Scenario[] = [
    { name: 'honest crowd alone', farm: 'none' },
    { name: 'farm from one address', farm: 'one address' },
    { name: 'farm from many addresses', farm: 'many addresses' },
    { name: 'farm, claim required', farm: 'many addresses', requireClaim: true },
    { name: 'farm solving pow', farm: 'many addresses', challenge: 'pow' },
    { name: 'farm solving auto', farm: 'many addresses', challenge: 'auto' },
  ];
  const results: DoorBotsResults = { honest: HONEST, farm: FARM, stock: STOCK, scenarios: [] };
  for (const [index, scenario] of scenarios.entries()) {
    const result = await runScenario(part, gateway.url, scenario, index);
    results.scenarios.push(result);
    part.log(`door-bots: ${describe(result)}`);
  }
  const alone = results.scenarios[0]!.soldOutSeconds;
  for (const s of results.scenarios.slice(1)) {
    const behind =
      s.soldOutSeconds === null || alone === null
        ? 'never sold out'
        : `${(s.soldOutSeconds - alone).toFixed(1)} s after the honest crowd alone (target: within 30 s)`;
    part.log(
      `door-bots: ${s.name}: sold out ${behind}; honest buyers' share of the units ${Math.round((100 * s.honestUnits) / STOCK)}%; farm places ${s.farmPlaces} of ${FARM}`,
    );
  }
  return results;
}

function describe(s: DoorBotsScenario): string {
  const challenge = s.challenge
    ? `; the farm's challenge maxnumber ${s.challenge.first} to ${s.challenge.last}, ${s.challenge.cpuMsPerAccount} ms of CPU (${s.challenge.wallMsPerAccount} ms) per account`
    : '';
  const refused =
    Object.entries(s.farmRefused)
      .map(([code, n]) => `${n} ${code}`)
      .join(', ') || 'none';
  return (
    `${s.name}: sold out ${s.soldOutSeconds === null ? 'never' : `${s.soldOutSeconds.toFixed(1)} s`} after the start, every honest buyer answered at ${s.honestDoneSeconds.toFixed(1)} s; ` +
    `${s.honestUnits} of ${STOCK} units to honest buyers; farm: ${s.farmPlaces} places, ${s.farmShadowed} shadowed, refused ${refused}; ` +
    `turns given ${s.turnsGiven}, abandoned ${s.turnsAbandoned}, no-show rate ${s.noShowRate.toFixed(2)}${challenge}`
  );
}

interface Client {
  id: string;
  token: string;
  address: string;
  ticket: string | null;
}

async function runScenario(part: PartContext, url: string, scenario: Scenario, index: number): Promise<DoorBotsScenario> {
  const tag = `${part.prefix}-bots${index}`;
  const honest = clients(
    signBuyerTokens(names(`${tag}-h`, HONEST), { claims: { verified: true } }),
    `${tag}-h`,
    (i) => `10.${index + 1}.${i >> 8}.${i & 255}`,
  );
  const farm =
    scenario.farm === 'none'
      ? []
      : clients(signBuyerTokens(names(`${tag}-f`, FARM)), `${tag}-f`, (i) =>
          scenario.farm === 'one address' ? FARM_ADDRESS : `10.${index + 101}.${i >> 8}.${i & 255}`,
        );
  // A connection the gateway closed as it was reused (its keep-alive timeout) fails the fetch: sent again,
  // as a client does (a join and a purchase are safe to repeat: the same place, or 409 with the reservation).
  const call = async (
    client: Client,
    method: string,
    path: string,
    body?: unknown,
    attempt = 1,
  ): Promise<{ status: number; body: Record<string, unknown>; retryAfter: number }> => {
    try {
      return await callOnce(client, method, path, body);
    } catch (error) {
      if (attempt >= 3 || !(error instanceof TypeError)) throw error;
      return call(client, method, path, body, attempt + 1);
    }
  };
  const callOnce = async (client: Client, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${client.token}`,
        'x-forwarded-for': client.address,
        ...(client.ticket && { 'queue-ticket': client.ticket }),
        ...(body !== undefined && { 'content-type': 'application/json' }),
      },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const json = (await res.json()) as Record<string, unknown>;
    if (typeof json.ticket === 'string') client.ticket = json.ticket;
    return { status: res.status, body: json, retryAfter: Number(res.headers.get('retry-after') ?? 1) };
  };

  // Joins take a few seconds (the farm from one address at its budget, challenges solved one by one):
  // the sale starts once every account could have joined.
  const leadMs = scenario.challenge ? 25_000 : 15_000;
  const startsAt = (await redisNow(part.redis)) + leadMs;
  const offset = (await redisNow(part.redis)) - Date.now();
  const sinceStart = () => (Date.now() + offset - startsAt) / 1000;
  const saleId = await createSale(part, url, scenario, startsAt, tag);

  const challengeCost = { cpuUs: 0, wallMs: 0, maxnumbers: [] as number[] };
  const solution = async (client: Client, measure: boolean) => {
    if (!scenario.challenge) return undefined;
    const challenge = (await call(client, 'GET', `/api/sales/${saleId}/queue/challenge`)).body as unknown as DoorChallenge;
    const cpu = process.cpuUsage();
    const wall = performance.now();
    const { solution: payload } = solveDoorChallenge(challenge);
    if (measure) {
      const used = process.cpuUsage(cpu);
      challengeCost.cpuUs += used.user + used.system;
      challengeCost.wallMs += performance.now() - wall;
      challengeCost.maxnumbers.push(challenge.maxnumber);
    }
    return payload;
  };
  // A join as a polite client sends it: again after Retry-After while refused 429 (the budgets).
  const join = async (client: Client, measure: boolean) => {
    for (;;) {
      const payload = await solution(client, measure);
      const res = await call(client, 'POST', `/api/sales/${saleId}/queue`, payload === undefined ? undefined : { solution: payload });
      if (res.status !== 429) return res;
      await sleep(res.retryAfter * 1000);
    }
  };

  // The farm first, alone (its CPU for the challenges is measured without the honest crowd's beside it):
  // from one address one account after another, from many a few at a time. It never comes back.
  const farmAnswers = new Map<string, { status: number; code?: string }>();
  const farmJoin = async (client: Client) => {
    const res = await join(client, true);
    farmAnswers.set(client.id, { status: res.status, code: res.body.code as string | undefined });
  };
  await inParallel(farm, scenario.farm === 'one address' ? 1 : 8, farmJoin);
  // The honest buyers: each joins, asks again after each Retry-After, buys when admitted and pays.
  const outcomes = await Promise.all(
    honest.map(async (client, i) => {
      await sleep((i * 2000) / HONEST);
      const joined = await join(client, false);
      if (joined.status !== 200) return { outcome: `join ${joined.status} ${String(joined.body.code)}`, at: sinceStart() };
      let answer = joined;
      for (;;) {
        if (sinceStart() * 1000 > SALE_DEADLINE_MS) return { outcome: 'deadline', at: sinceStart() };
        const state = answer.body.state as string;
        if (state === 'admitted') {
          const bought = await call(client, 'POST', `/api/sales/${saleId}/purchase`, { quantity: 1 });
          if (bought.status === 202 || bought.body.code === 'ALREADY_PURCHASED') {
            const at = sinceStart();
            await pay(part, url, client, bought.body.reservationId as string);
            return { outcome: 'bought', at };
          }
          if (bought.status === 410) return { outcome: 'sold_out', at: sinceStart() };
        } else if (state !== 'waiting') return { outcome: state, at: sinceStart() };
        await sleep(answer.retryAfter * 1000);
        answer = await call(client, 'GET', `/api/sales/${saleId}/queue`);
      }
    }),
  );

  const door = await readDoor(part, url, saleId);
  const keys = saleKeys(part.prefix, saleId);
  let farmPlaces = 0;
  for (const client of farm) if ((await part.redis.zscore(keys.queue, client.id)) !== null) farmPlaces++;
  const farmRefused: Record<string, number> = {};
  for (const answer of farmAnswers.values())
    if (answer.status !== 200)
      farmRefused[answer.code ?? String(answer.status)] = (farmRefused[answer.code ?? String(answer.status)] ?? 0) + 1;
  const bought = outcomes.filter((o) => o.outcome === 'bought');
  const n = challengeCost.maxnumbers.length;
  return {
    name: scenario.name,
    soldOutSeconds: bought.length === STOCK ? Math.max(...bought.map((o) => o.at)) : null,
    honestDoneSeconds: Math.max(...outcomes.map((o) => o.at)),
    honestUnits: bought.length,
    farmPlaces,
    farmShadowed: [...farmAnswers.values()].filter((a) => a.status === 200).length - farmPlaces,
    farmRefused,
    turnsGiven: door.admitted,
    turnsAbandoned: door.abandoned,
    noShowRate: door.noShowRate,
    ...(n > 0 && {
      challenge: {
        first: challengeCost.maxnumbers[0]!,
        last: challengeCost.maxnumbers[n - 1]!,
        cpuMsPerAccount: Number((challengeCost.cpuUs / 1000 / n).toFixed(1)),
        wallMsPerAccount: Number((challengeCost.wallMs / n).toFixed(1)),
      },
    }),
  };
}

const names = (tag: string, n: number) => Array.from({ length: n }, (_, i) => `${tag}-${i}`);
const clients = (tokens: string[], tag: string, address: (i: number) => string): Client[] =>
  tokens.map((token, i) => ({ id: `${tag}-${i}`, token, address: address(i), ticket: null }));

async function inParallel<T>(items: T[], width: number, each: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) await each(items[next++]!);
    }),
  );
}

async function createSale(part: PartContext, url: string, scenario: Scenario, startsAt: number, tag: string): Promise<number> {
  const res = await fetch(`${url}/api/admin/sales`, {
    method: 'POST',
    headers: { authorization: `Bearer ${part.config.ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      name: `${part.prefix} door-bots ${tag}`,
      stock: STOCK,
      perUserLimit: 1,
      startsAt: new Date(startsAt).toISOString(),
      endsAt: new Date(startsAt + 3_600_000).toISOString(),
      // The door's defaults but for what the scenario is about.
      admission: {
        mode: 'queue',
        ...(scenario.requireClaim && { requireClaim: 'verified' }),
        ...(scenario.challenge && { challenge: scenario.challenge }),
      },
    }),
  });
  const body = (await res.json()) as { id?: number };
  if (res.status !== 201 || body.id === undefined)
    throw new Error(`door-bots: creating the sale answered ${res.status} ${JSON.stringify(body)}`);
  return body.id;
}

/**
 * Pays as a buyer does once their order shows (the reservation no longer `pending`), and as a provider
 * sends the event: the same one again after Retry-After while the answer is 503 or 429.
 */
async function pay(part: PartContext, url: string, client: Client, reservationId: string): Promise<void> {
  for (;;) {
    const res = await fetch(`${url}/api/reservations/${reservationId}`, {
      headers: { authorization: `Bearer ${client.token}`, 'x-forwarded-for': client.address },
    });
    const { status } = (await res.json()) as { status?: string };
    if (res.status === 200 && status !== 'pending') break;
    await sleep(200);
  }
  const event = paymentEventRequest(part.config.PAYMENT_WEBHOOK_SECRET, { id: `evt_${randomUUID()}`, reservationId, amountCents: 4999 });
  for (let attempt = 1; attempt <= 20; attempt++) {
    const res = await fetch(`${url}/api/payments/events`, {
      method: 'POST',
      headers: { ...event.headers, 'content-type': 'application/json', 'x-forwarded-for': client.address },
      body: JSON.stringify(event.body),
    });
    await res.arrayBuffer();
    if (res.status !== 503 && res.status !== 429) return;
    await sleep(Number(res.headers.get('retry-after') ?? 1) * 1000);
  }
}

async function readDoor(
  part: PartContext,
  url: string,
  saleId: number,
): Promise<{ admitted: number; abandoned: number; noShowRate: number }> {
  const res = await fetch(`${url}/api/admin/sales/${saleId}/admission`, {
    method: 'POST',
    headers: { authorization: `Bearer ${part.config.ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: '{}',
  });
  return ((await res.json()) as { door: { admitted: number; abandoned: number; noShowRate: number } }).door;
}
