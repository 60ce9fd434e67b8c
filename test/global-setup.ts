import { migrate } from '@flashsale/order-store';

/** Migrates the test database once per run (the same runner as `npm run db:migrate`). */
export default async function setup(): Promise<void> {
  await migrate(process.env.TEST_DATABASE_URL ?? 'mysql://root@127.0.0.1:3306/flashsale_test');
}
