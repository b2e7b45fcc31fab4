import { migrateAll } from '../../migrations/migrate.ts';

export const migrateHelp = `pushctl migrate [--mysql-only]

  applies migrations/mysql and migrations/clickhouse in order, idempotently (applied versions are
  recorded in each store); creates the databases named by PUSH_MYSQL_URL (or each of PUSH_MYSQL_SHARDS,
  reported per shard) and PUSH_CLICKHOUSE_DATABASE`;

export async function migrateCommand(args: string[]): Promise<number> {
  const result = await migrateAll({ mysqlOnly: args.includes('--mysql-only') });
  const line = (side: string, r?: { applied: number[]; alreadyApplied: number[] }) =>
    r && console.log(`${side.padEnd(10)} applied [${r.applied.join(', ')}]  already [${r.alreadyApplied.join(', ')}]`);
  if (result.mysqlShards.length === 1) line('mysql', result.mysql);
  else result.mysqlShards.forEach((r, i) => line(`mysql[${i}]`, r));
  line('clickhouse', result.clickhouse);
  return 0;
}
