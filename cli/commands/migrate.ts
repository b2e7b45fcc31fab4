import { migrateAll } from '../../migrations/migrate.ts';

export const migrateHelp = `pushctl migrate [--mysql-only]

  applies migrations/mysql and migrations/clickhouse in order, idempotently (applied versions are
  recorded in each store); creates the databases named by PUSH_MYSQL_URL and PUSH_CLICKHOUSE_DATABASE`;

export async function migrateCommand(args: string[]): Promise<number> {
  const result = await migrateAll({ mysqlOnly: args.includes('--mysql-only') });
  const line = (side: string, r?: { applied: number[]; alreadyApplied: number[] }) =>
    r && console.log(`${side.padEnd(10)} applied [${r.applied.join(', ')}]  already [${r.alreadyApplied.join(', ')}]`);
  line('mysql', result.mysql);
  line('clickhouse', result.clickhouse);
  return 0;
}
