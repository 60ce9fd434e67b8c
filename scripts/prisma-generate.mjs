// Generates the Prisma client without the native schema engine, which cannot be downloaded here.
// `prisma generate` only needs the engine path to exist (it never runs the engine), so any existing file
// will do; the runtime client uses the MariaDB driver adapter and needs no engine at all.
import { spawnSync } from 'node:child_process';

const env = {
  ...process.env,
  PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY ?? process.execPath,
  CHECKPOINT_DISABLE: '1',
  PRISMA_HIDE_UPDATE_MESSAGE: '1',
};
const result = spawnSync('npx', ['--no-install', 'prisma', 'generate'], { stdio: 'inherit', env });
process.exit(result.status ?? 1);
