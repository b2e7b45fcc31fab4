import { readEndpoints } from '../../common/endpoints.ts';
import { readInt } from '../../common/config.ts';
import { archiveShards } from '../../migrations/archive.ts';
import { openShardedPools } from '../../sinks/mysql/shards.ts';

export const archiveHelp = `pushctl archive [--days N] [--batch N]

  moves im_push_task rows older than N days (default 7) into im_push_task_archive, in batches of
  --batch rows (default 1000), one transaction each; on every shard of PUSH_MYSQL_SHARDS at once
  (else the database of PUSH_MYSQL_URL), each shard into its own archive. Prints the rows moved per
  shard. Idempotent and safe to interrupt: run it from cron (docs/operations.md, "MySQL shards")`;

function option(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

export async function archiveCommand(args: string[]): Promise<number> {
  const retentionDays = readInt({ '--days': option(args, '--days') }, '--days', 7, { min: 1, max: 3650 });
  const batchSize = readInt({ '--batch': option(args, '--batch') }, '--batch', 1_000, { min: 1, max: 100_000 });
  const endpoints = readEndpoints();
  const shards = openShardedPools(endpoints.mysqlShards, endpoints.mysqlSecurity, { connectionLimit: 1 });
  try {
    const moved = await archiveShards(shards.all(), { retentionDays, batchSize });
    moved.forEach((n, i) => console.log(`${(shards.count === 1 ? 'mysql' : `mysql[${i}]`).padEnd(10)} moved ${n} rows older than ${retentionDays} days`));
    return 0;
  } finally {
    await shards.end();
  }
}
