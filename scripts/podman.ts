/**
 * podman as `npm run image:build` and `npm run image:check` drive it (Debian's podman, as root). Its
 * defaults fail on these machines (setrlimit refused, then crun's "cgroups in hybrid mode not supported"):
 * runc, the cgroupfs manager and no default ulimits work, set in a containers.conf of our own
 * (CONTAINERS_CONF), which `podman system service` (the Docker-compatible API compose talks to) reads too.
 * The image names are read from the Dockerfile and the compose files, so they cannot drift apart.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** Where the Debian root filesystem, npm's tarball and the base images' build contexts are kept between runs. */
export const DEFAULT_CACHE = process.env.FLASHSALE_IMAGE_CACHE ?? join(homedir(), '.cache', 'flashsale-image');

const CONTAINERS_CONF = `# Written by scripts/podman.ts: what podman needs on these machines.
[containers]
default_ulimits = []

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
`;

/** The environment every podman command (and the API service) runs with. */
export function podmanEnv(cache = DEFAULT_CACHE): NodeJS.ProcessEnv {
  mkdirSync(cache, { recursive: true });
  const conf = join(cache, 'containers.conf');
  writeFileSync(conf, CONTAINERS_CONF);
  return { ...process.env, CONTAINERS_CONF: conf };
}

export class CommandFailed extends Error {
  override readonly name = 'CommandFailed';
  constructor(
    readonly command: string,
    readonly code: number | null,
    readonly stdout: string,
    readonly stderr: string,
  ) {
    super(`${command} exited ${code}${stderr.trim() ? `: ${stderr.trim().split('\n').slice(-5).join('\n')}` : ''}`);
  }
}

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Show the command's output as it comes (long builds), besides keeping it. */
  echo?: boolean;
  /** Resolve with the exit code instead of throwing when it is not 0. */
  allowFailure?: boolean;
  input?: string;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end, without a shell; throws CommandFailed on a non-zero exit unless allowed. */
export function run(command: string, args: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd ?? ROOT, env: options.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (options.echo) process.stdout.write(chunk);
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      if (options.echo) process.stderr.write(chunk);
    });
    child.stdin.end(options.input ?? '');
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0 || options.allowFailure) resolve({ code: code ?? -1, stdout, stderr });
      else reject(new CommandFailed(`${command} ${args.join(' ')}`, code, stdout, stderr));
    });
  });
}

/** `podman <args>` with the settings above. */
export function podman(env: NodeJS.ProcessEnv, args: readonly string[], options: Omit<RunOptions, 'env'> = {}): Promise<RunResult> {
  return run('podman', args, { ...options, env });
}

/** Whether podman has an image of that name. */
export async function imageExists(env: NodeJS.ProcessEnv, name: string): Promise<boolean> {
  return (await podman(env, ['image', 'exists', name], { allowFailure: true })).code === 0;
}

/**
 * A short name as Docker reads it (`node:24-bookworm-slim` is docker.io/library/node:24-bookworm-slim):
 * tagged so, a local image answers the Dockerfile's FROM and the compose files' `image:` without a pull.
 */
export function qualified(name: string): string {
  const [first] = name.split('/');
  if (name.includes('/') && (first!.includes('.') || first!.includes(':') || first === 'localhost')) return name;
  return name.includes('/') ? `docker.io/${name}` : `docker.io/library/${name}`;
}

/** The application's image as podman names it; exits with the command that builds it when podman has none. */
export async function builtAppImage(env: NodeJS.ProcessEnv): Promise<string> {
  const { app } = projectImages();
  const image = qualified(app);
  if (!(await imageExists(env, image))) {
    console.error(`${app} is not built: npm run image:build first`);
    process.exit(1);
  }
  return image;
}

/** The images this project's files name: the Dockerfile's base, the stores', the proxy's and the application's. */
export interface ProjectImages {
  node: string;
  redis: string;
  mariadb: string;
  haproxy: string;
  app: string;
}

export function projectImages(root = ROOT): ProjectImages {
  const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
  const node = /^ARG NODE_IMAGE=(\S+)$/m.exec(dockerfile)?.[1];
  const images = [join(root, 'infra/docker-compose.yml'), join(root, 'infra/docker-compose.app.yml')].flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(/^\s+image:\s*(\S+)\s*$/gm)].map((m) => m[1]!),
  );
  const find = (repository: string) => images.find((image) => image.split(':')[0] === repository);
  const found = { node, redis: find('redis'), mariadb: find('mariadb'), haproxy: find('haproxy'), app: find('flashsale') };
  for (const [what, image] of Object.entries(found)) {
    if (image === undefined) throw new Error(`no ${what} image named in the Dockerfile or infra/docker-compose*.yml`);
  }
  return found as ProjectImages;
}

/** Seconds since `started` (performance.now()), for the reports. */
export function secondsSince(started: number): string {
  return `${((performance.now() - started) / 1000).toFixed(1)} s`;
}
