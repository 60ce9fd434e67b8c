import { defineConfig } from 'prisma/config';

// The schema engine cannot be downloaded on the project's machines, so `migrate deploy` is replaced by
// `npm run db:migrate` (packages/order-store/src/migrator.ts); the layout below stays Prisma's own so a
// machine with the engine can run `prisma migrate deploy` against the same folder.
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'mysql://root@127.0.0.1:3306/flashsale' },
});
