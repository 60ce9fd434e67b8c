import { loadConfig } from '@flashsale/config';
import { migrate } from './migrator.ts';

// `npm run db:migrate`: applies prisma/migrations to DATABASE_URL (see migrator.ts for why not Prisma's CLI).
const config = loadConfig();
const result = await migrate(config.DATABASE_URL);
for (const name of result.applied) console.log(`applied ${name}`);
console.log(`database ${result.database}: ${result.applied.length} applied, ${result.alreadyApplied.length} already applied`);
