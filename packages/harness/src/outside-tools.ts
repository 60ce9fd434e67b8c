import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

/**
 * Every program outside node_modules that the test suite starts, with the Debian package that brings
 * it. The one list: `npm test`'s preflight (infra/preflight.ts) checks it, `.ci/run` installs from it,
 * docs/development.md names the same, and a harness start that cannot spawn a binary names its package
 * from here. A binary a test spawns and this list lacks is how a suite goes green on the machine that
 * had it installed by hand and red on the next one.
 */
export interface OutsideTool {
  /** The name spawned (looked up on PATH), or the absolute path of a program or a library. */
  binary: string;
  /** The Debian package that brings it; null when no Debian package does (k6). */
  debianPackage: string | null;
  /** What in the suite starts it. */
  usedBy: string;
  /** 'suite': every `npm test` needs it; 'ci': only the CI run (outside CI its tests use another runner). */
  neededBy: 'suite' | 'ci';
}

/** Where Debian's Chromium is, unless CHROMIUM_PATH names another binary (packages/harness/src/chromium.ts). */
export const chromiumPath = (env: NodeJS.ProcessEnv = process.env): string => env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export const OUTSIDE_TOOLS: readonly OutsideTool[] = [
  {
    binary: 'redis-server',
    debianPackage: 'redis-server',
    usedBy: "the tests' own Redis servers, clusters and sentinels (redis-server --sentinel)",
    neededBy: 'suite',
  },
  { binary: 'redis-cli', debianPackage: 'redis-tools', usedBy: 'creating a Redis Cluster (redis-cli --cluster create)', neededBy: 'suite' },
  {
    binary: 'mariadbd',
    debianPackage: 'mariadb-server',
    usedBy: "the fault tests' own MariaDB servers (replicas, restores, outages)",
    neededBy: 'suite',
  },
  {
    binary: 'mariadb-install-db',
    debianPackage: 'mariadb-server',
    usedBy: "installing the fault tests' MariaDB data directories",
    neededBy: 'suite',
  },
  {
    binary: 'mariadb',
    debianPackage: 'mariadb-client',
    usedBy: "restoring a dump (test/faults/mysql-restore.test.ts); HAProxy's Galera check (infra/galera/wsrep-check.sh)",
    neededBy: 'suite',
  },
  {
    binary: 'faketime',
    debianPackage: 'faketime',
    usedBy: 'processes run with their clocks set wrong (libfaketime, test/faults/clock-skew.test.ts)',
    neededBy: 'suite',
  },
  { binary: 'wrk', debianPackage: 'wrk', usedBy: "the soak's load (loadtest/soak) and the benchmark", neededBy: 'suite' },
  {
    binary: 'promtool',
    debianPackage: 'prometheus',
    usedBy: "checking infra/prometheus's config, rules and rule tests",
    neededBy: 'suite',
  },
  {
    binary: 'prometheus',
    debianPackage: 'prometheus',
    usedBy: 'a real Prometheus scraping the processes (test/e2e/prometheus-infra.test.ts)',
    neededBy: 'suite',
  },
  {
    binary: 'docker-compose',
    debianPackage: 'docker-compose',
    usedBy: 'checking every documented compose command (docker-compose config)',
    neededBy: 'suite',
  },
  {
    binary: chromiumPath(),
    debianPackage: 'chromium',
    usedBy: "the dashboard's and the buyer page's browser tests (playwright-core drives Debian's Chromium)",
    neededBy: 'suite',
  },
  {
    binary: 'haproxy',
    debianPackage: 'haproxy',
    usedBy: "the single address in front of the tests' Galera clusters (infra/galera/haproxy.cfg)",
    neededBy: 'suite',
  },
  {
    binary: '/usr/lib/galera/libgalera_smm.so',
    debianPackage: 'galera-4',
    usedBy: "the Galera provider the tests' clustered mariadbd load (wsrep)",
    neededBy: 'suite',
  },
  {
    binary: 'mysqldump',
    debianPackage: 'mariadb-client',
    usedBy: "a joining Galera node's state transfer (wsrep_sst_mysqldump)",
    neededBy: 'suite',
  },
  {
    binary: 'prlimit',
    debianPackage: 'util-linux',
    usedBy: "lowering a gateway's open-file limit (test/faults/connection-flood.test.ts)",
    neededBy: 'suite',
  },
  {
    binary: 'podman',
    debianPackage: 'podman',
    usedBy: 'building and running the image and the compose stack (npm run image:build, image:check)',
    neededBy: 'ci',
  },
  {
    binary: '/usr/libexec/podman/catatonit',
    debianPackage: 'catatonit',
    usedBy: "podman's init, for the compose files' `init: true` (npm run image:check)",
    neededBy: 'ci',
  },
  {
    binary: 'debootstrap',
    debianPackage: 'debootstrap',
    usedBy: 'the Debian root filesystem of the local base images (npm run image:build)',
    neededBy: 'ci',
  },
  {
    binary: 'k6',
    debianPackage: null,
    usedBy: 'the k6 scenarios smoke-run on a real k6 (outside CI, the Node runner runs them alone)',
    neededBy: 'ci',
  },
];

/** The full path `binary` runs from under `env`'s PATH (or itself, when absolute and executable); undefined when none. */
export function whereIs(binary: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const runnable = (path: string) => {
    try {
      accessSync(path, constants.X_OK);
      return existsSync(path);
    } catch {
      return false;
    }
  };
  // An absolute path names a file that is loaded rather than run (a library) as well as a program.
  if (isAbsolute(binary)) return existsSync(binary) ? binary : undefined;
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir && runnable(join(dir, binary))) return join(dir, binary);
  }
  return undefined;
}

/** The tools of the list that `env` needs and cannot run: the CI run needs them all, any other run the suite's. */
export function missingTools(env: NodeJS.ProcessEnv = process.env, tools: readonly OutsideTool[] = OUTSIDE_TOOLS): OutsideTool[] {
  const inCi = env.CI === 'true';
  return tools.filter((tool) => (tool.neededBy === 'suite' || inCi) && whereIs(tool.binary, env) === undefined);
}

/** The one command that installs the Debian packages of `tools` (those that have one), or undefined. */
export function installCommand(tools: readonly OutsideTool[]): string | undefined {
  const packages = [...new Set(tools.flatMap((tool) => (tool.debianPackage ? [tool.debianPackage] : [])))];
  return packages.length > 0 ? `apt-get update && apt-get install -y ${packages.join(' ')}` : undefined;
}

/** What to do about a binary that could not be started: the package that brings it, from the list. */
export function installHint(binary: string): string {
  const tool = OUTSIDE_TOOLS.find((candidate) => candidate.binary === binary);
  if (!tool) return `${binary} is not in the suite's list of outside tools (packages/harness/src/outside-tools.ts): add it there`;
  return tool.debianPackage
    ? `it comes with Debian's package ${tool.debianPackage} (apt-get install -y ${tool.debianPackage})`
    : `no Debian package brings it: put ${binary} on PATH`;
}
