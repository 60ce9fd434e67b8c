import { spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { parseCommandLine } from '@flashsale/config';
import { installCommand, missingTools, OUTSIDE_TOOLS, whereIs, type OutsideTool } from '@flashsale/harness/outside-tools';

/**
 * The suite's outside programs, checked before it starts (`npm test` runs this first): a missing one
 * fails here in a second, naming it, its Debian package and the command that installs it, rather than
 * as a start-up wait that runs out its minute in every test that spawns it. With --install, what is
 * missing is installed from Debian's packages first when this process may (root, apt-get present), as
 * `npm run services` starts a local server that does not answer.
 */

const spec = {
  usage: `usage: npm run preflight [-- --install] [-- --list]

Checks that every program outside node_modules that the test suite starts is on PATH
(packages/harness/src/outside-tools.ts lists them, each with the Debian package that brings it).
Exit 0 when all are there; exit 1 at once, naming what is missing and the command that installs it.
k6 is needed only in CI (CI=true); elsewhere its scenarios run on the Node runner alone.

  --install   install what is missing from Debian's packages first (needs root and apt-get);
              \`npm test\` runs the preflight this way
  --list      print every program, its package, where it was found and what uses it`,
  options: { install: { type: 'boolean' }, list: { type: 'boolean' } },
} as const;

const describe = (tools: readonly OutsideTool[]) =>
  tools
    .map(
      (tool) =>
        `  ${tool.binary} (${tool.debianPackage ? `Debian package ${tool.debianPackage}` : 'no Debian package: put it on PATH'}): ${tool.usedBy}`,
    )
    .join('\n');

function installFromDebian(tools: readonly OutsideTool[]): boolean {
  const packages = [...new Set(tools.flatMap((tool) => (tool.debianPackage ? [tool.debianPackage] : [])))];
  if (packages.length === 0 || process.getuid?.() !== 0 || whereIs('apt-get') === undefined) return false;
  console.log(`preflight: installing ${packages.join(' ')} from Debian's packages (apt-get)`);
  const quiet: SpawnSyncOptions = { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } };
  if (spawnSync('apt-get', ['update', '-qq'], quiet).status !== 0) return false;
  return spawnSync('apt-get', ['install', '-y', '-qq', ...packages], quiet).status === 0;
}

const { values } = parseCommandLine(spec);
if (values.list) {
  for (const tool of OUTSIDE_TOOLS)
    console.log(`${tool.binary}\t${tool.debianPackage ?? '-'}\t${whereIs(tool.binary) ?? 'missing'}\t${tool.neededBy}\t${tool.usedBy}`);
}
let missing = missingTools();
if (missing.length > 0 && values.install && installFromDebian(missing)) missing = missingTools();
if (missing.length > 0) {
  const command = installCommand(missing);
  console.error(
    `preflight: the test suite starts programs this machine does not have on PATH:\n${describe(missing)}\n` +
      (command ? `Install them (as root): ${command}\n` : '') +
      (missing.some((tool) => !tool.debianPackage)
        ? 'A program without a Debian package must be put on PATH by hand (CI puts its k6 there).\n'
        : ''),
  );
  process.exit(1);
}
console.log(
  `preflight: all ${OUTSIDE_TOOLS.filter((tool) => tool.neededBy === 'suite' || process.env.CI === 'true').length} outside programs the suite starts are on PATH`,
);
