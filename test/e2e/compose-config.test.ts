import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '@flashsale/config';

/**
 * Every compose command the documentation gives (README, docs/, the compose files' own comments), checked with `docker-compose config` (Debian's docker-compose 1.29,
 * which needs no Docker engine): the files and profiles it names parse and interpolate, without the
 * application's secrets where the stores alone are asked for, and only with them where the application is;
 * each service it names exists. No engine runs here, so nothing is started: this is what can be checked.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SECRETS = { AUTH_SECRET: 'a'.repeat(32), ADMIN_TOKEN: 'b'.repeat(16), PAYMENT_WEBHOOK_SECRET: 'c'.repeat(32) };
const NO_SECRETS = { AUTH_SECRET: undefined, ADMIN_TOKEN: undefined, PAYMENT_WEBHOOK_SECRET: undefined, REDIS_CLUSTER_NODES: undefined };

const DOCUMENTS = [
  'README.md',
  ...readdirSync(`${ROOT}docs`)
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
  ...readdirSync(`${ROOT}infra`)
    .filter((name) => name.endsWith('.yml'))
    .map((name) => `infra/${name}`),
];

interface Documented {
  where: string;
  text: string;
  /** The global options: `-f <file>` and `--profile <name>`, in order. */
  options: string[];
  /** The services an `up` or `run` names. */
  services: string[];
}

/** `docker compose` or `docker-compose`, its -f and --profile options, the command and what follows it on the line. */
const COMMAND = /docker(?:-compose| compose)((?:\s+(?:-f|--file|--profile)\s+[^\s`]+)+)\s+(up|run|config|down|ps|logs)([^`\n#;)]*)/g;

function documentedCommands(): Documented[] {
  const found: Documented[] = [];
  for (const where of DOCUMENTS) {
    const text = readFileSync(`${ROOT}${where}`, 'utf8').replace(/(docker|-f|--file|--profile)\n\s*/g, '$1 ');
    for (const match of text.matchAll(COMMAND)) {
      const options = match[1]!.trim().split(/\s+/);
      const rest = match[3]!.trim().split(/\s+/).filter(Boolean);
      const services: string[] = [];
      if (match[2] === 'up') {
        for (let i = 0; i < rest.length; i += 1) {
          if (rest[i] === '--scale') i += 1;
          else if (!rest[i]!.startsWith('-')) services.push(rest[i]!);
        }
      } else if (match[2] === 'run') {
        const service = rest.find((word) => !word.startsWith('-'));
        if (service) services.push(service);
      }
      found.push({ where, text: match[0], options, services });
    }
  }
  return found;
}

async function composeConfig(
  options: string[],
  env: Record<string, string | undefined>,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  const merged: NodeJS.ProcessEnv = { ...process.env };
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) delete merged[name];
    else merged[name] = value;
  }
  try {
    const { stdout, stderr } = await promisify(execFile)('docker-compose', [...options, 'config', ...args], { cwd: ROOT, env: merged });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    if (typeof code !== 'number') throw error;
    return { code, stdout, stderr };
  }
}

const documented = documentedCommands();

describe('the documented compose commands, under docker-compose config', () => {
  it('are found: the stores alone, the whole system, the cluster profile, in both spellings', () => {
    const optionSets = new Set(documented.map((d) => d.options.join(' ')));
    expect(optionSets).toContain('-f infra/docker-compose.yml');
    expect(optionSets).toContain('-f infra/docker-compose.yml -f infra/docker-compose.app.yml');
    expect(optionSets).toContain('-f infra/docker-compose.yml -f infra/docker-compose.app.yml --profile cluster');
    // The README's fallback names the Compose v2 plugin and the standalone v1 command.
    const readme = documented.filter((d) => d.where === 'README.md').map((d) => d.text);
    expect(readme.some((text) => text.startsWith('docker compose '))).toBe(true);
    expect(readme.some((text) => text.startsWith('docker-compose '))).toBe(true);
  });

  // One check per set of files and profiles (docker-compose takes a few seconds a call), with every
  // service the commands of that set name.
  const bySet = Map.groupBy(documented, (d) => d.options.join(' '));
  it.each(
    [...bySet].map(([options, commands]) => [options, commands.map((c) => `${c.where}: ${c.text.trim()}`).join('; '), commands] as const),
  )('%s (%s)', async (_options, _texts, commands) => {
    const options = commands[0]!.options;
    const withApp = options.includes('infra/docker-compose.app.yml');
    const bare = await composeConfig(options, NO_SECRETS, '--services');
    if (withApp) {
      // The application's processes refuse to be configured without their secrets, naming the first missing.
      expect(bare.code).toBe(1);
      expect(bare.stderr).toContain('set AUTH_SECRET (at least 32 characters)');
    } else {
      // The stores need no secret.
      expect({ code: bare.code, stderr: bare.stderr }).toEqual({ code: 0, stderr: '' });
    }
    const configured = await composeConfig(options, { ...NO_SECRETS, ...SECRETS }, '--services');
    expect({ code: configured.code, stderr: configured.stderr }).toEqual({ code: 0, stderr: '' });
    const services = configured.stdout.trim().split('\n');
    for (const service of commands.flatMap((c) => c.services)) expect(services).toContain(service);
    expect(services).toEqual(
      expect.arrayContaining(withApp ? ['redis', 'mariadb', 'migrate', 'gateway', 'worker', 'reconciler', 'proxy'] : ['redis', 'mariadb']),
    );
    if (!withApp) expect(services).not.toContain('gateway');
  });

  it("the stores' MariaDB is what DATABASE_URL's default expects: root without a password, on 127.0.0.1:3306, database flashsale", async () => {
    const { stdout } = await composeConfig(['-f', 'infra/docker-compose.yml'], NO_SECRETS);

    const mariadb = (parse(stdout) as { services: Record<string, { environment: Record<string, string>; ports: string[] }> }).services
      .mariadb!;
    expect(mariadb.environment).toMatchObject({
      MARIADB_ALLOW_EMPTY_ROOT_PASSWORD: 'yes',
      MARIADB_ROOT_PASSWORD: '',
      MARIADB_DATABASE: 'flashsale',
    });
    expect(mariadb.ports).toEqual(['127.0.0.1:3306:3306/tcp']);
    expect(loadConfig({}).DATABASE_URL).toBe('mysql://root@127.0.0.1:3306/flashsale');
  });
});
