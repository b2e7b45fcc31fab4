/**
 * Moves push tasks older than the hot retention (7 days, docs/design.md, "Stores") from
 * im_push_task into im_push_task_archive, in batches, each batch one transaction (copy, then
 * delete), so the hot table is never locked for long and a crash mid-way loses and duplicates
 * nothing (INSERT IGNORE on the archive's primary key makes a repeated batch harmless). With uid
 * shards (sinks/mysql/shards.ts) every shard archives its own rows (`archiveShards`): a row and its
 * archive stay on the user's shard.
 */
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { allSettledOrThrow } from '../common/settle.ts';

export interface ArchiveOptions {
  /** Rows older than this (by created_at) move, in days. Default 7. */
  retentionDays?: number;
  /** Rows per batch. Default 1 000. */
  batchSize?: number;
  /** The current time in epoch ms. Default Date.now(). */
  nowMs?: number;
  /** Default im_push_task / im_push_task_archive. */
  table?: string;
  archiveTable?: string;
}

/** Every column of im_push_task (migrations/mysql/001, 004, 006 and 010; the archive gains them in 002, 007 and 011). */
const COLUMNS =
  'id, task_id, uid, conv_id, seq, device_id, msg_id, app_id, platform, vendor, vendor_message_id, collapse_id, status, attempts, fail_code, ' +
  'channel_trail, created_at, updated_at, submitted_at, unread_cnt, payload, collapse_key, merge_kind, claims';

/** Returns how many rows moved. */
export async function archiveTasks(pool: Pool, options: ArchiveOptions = {}): Promise<number> {
  const cutoff = new Date((options.nowMs ?? Date.now()) - (options.retentionDays ?? 7) * 86_400_000);
  const batch = options.batchSize ?? 1_000;
  const table = `\`${options.table ?? 'im_push_task'}\``;
  const archive = `\`${options.archiveTable ?? 'im_push_task_archive'}\``;
  let moved = 0;
  for (;;) {
    const conn = await pool.getConnection();
    try {
      await conn.beginTransaction();
      const [rows] = await conn.query<RowDataPacket[]>(`SELECT id FROM ${table} WHERE created_at < ? ORDER BY id LIMIT ? FOR UPDATE`, [cutoff, batch]);
      if (rows.length === 0) {
        await conn.commit();
        return moved;
      }
      const ids = rows.map((r) => r.id as number);
      await conn.query(`INSERT IGNORE INTO ${archive} (${COLUMNS}) SELECT ${COLUMNS} FROM ${table} WHERE id IN (?)`, [ids]);
      await conn.query(`DELETE FROM ${table} WHERE id IN (?)`, [ids]);
      await conn.commit();
      moved += ids.length;
      if (ids.length < batch) return moved;
    } catch (error) {
      // The statement's error is the one to report; a rollback that fails (the connection is gone) has nothing left to undo.
      await conn.rollback().catch(() => undefined);
      throw error;
    } finally {
      conn.release();
    }
  }
}

/**
 * `archiveTasks` on every shard at once (pools in shard order, e.g. ShardedPools.all()). Returns
 * the rows moved per shard. A shard that fails does not stop the others; the first error is thrown
 * once all have finished (the job runs again and picks up where it stopped, as on one database).
 */
export async function archiveShards(pools: readonly Pool[], options: ArchiveOptions = {}): Promise<number[]> {
  return allSettledOrThrow(pools.map((pool) => archiveTasks(pool, options)));
}
