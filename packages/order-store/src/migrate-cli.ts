import { loadConfigOrExit, parseCommandLine } from '@flashsale/config';
import { migrate } from './migrator.ts';

// `npm run db:migrate`: applies prisma/migrations to DATABASE_URL (see migrator.ts for why not Prisma's CLI).
parseCommandLine({
  usage: `usage: npm run db:migrate

Applies the migrations of prisma/migrations that DATABASE_URL's database lacks, creating the database
if it is missing; idempotent. Records them in _prisma_migrations as Prisma does. No options.`,
});
const config = loadConfigOrExit();
const result = await migrate(config.DATABASE_URL);
for (const name of result.applied) console.log(`applied ${name}`);
console.log(`database ${result.database}: ${result.applied.length} applied, ${result.alreadyApplied.length} already applied`);
