import type { Pool } from 'mysql2/promise';
import { withMysqlRetry, type MysqlWriteListener } from './errors.ts';
import { eachShard, groupByShard, shardedPools, type ShardedPools } from './shards.ts';
import type { TaskStatusUpdate, TaskStatusWriter } from '../../processors/receipt-join/records.ts';
import { TASK_STATUS } from '../../processors/model/task-status.ts';

export interface MysqlTaskStatusWriterOptions {
  /** The one database (tests, a single-database deployment); or `shards`. */
  readonly pool?: Pool;
  /** The uid shards (sinks/mysql/shards.ts): each update goes to its task's uid's shard. */
  readonly shards?: ShardedPools;
  /** Default `im_push_task`. */
  readonly table?: string;
  /** Column holding the task id (deterministic id of uid, conv_id, seq, device_id). Default `task_id`. */
  readonly taskIdColumn?: string;
  /** Default `status`. */
  readonly statusColumn?: string;
  /** Ids per UPDATE statement. Default 500. */
  readonly maxBatchIds?: number;
  readonly retryInitialDelayMs?: number;
  readonly retryMaxDelayMs?: number;
  /** Retries (metrics). */
  readonly listener?: MysqlWriteListener;
}

/**
 * im_push_task.status from receipts, batched: delivered (2) replaces pending, submitted and failed;
 * failed (3) replaces only pending and submitted, so a late failure never undoes a delivery and
 * merged (4) tasks stay merged. Idempotent: replays set the same values. Each update goes to the
 * shard of its task's uid (the receipt's submission carries it), the shards written in parallel.
 * `flush` retries transient MySQL errors and resolves once every buffered update is applied.
 */
export class MysqlTaskStatusWriter implements TaskStatusWriter {
  /** task id → uid. */
  private delivered = new Map<string, string>();
  private failed = new Map<string, string>();
  private readonly shards: ShardedPools;

  constructor(private readonly options: MysqlTaskStatusWriterOptions) {
    if (!options.shards && !options.pool) throw new Error('MysqlTaskStatusWriter: a pool or shards');
    this.shards = options.shards ?? shardedPools([options.pool!]);
  }

  update(update: TaskStatusUpdate): void {
    if (update.status === TASK_STATUS.delivered) {
      this.delivered.set(update.taskId, update.uid);
      this.failed.delete(update.taskId);
    } else if (!this.delivered.has(update.taskId)) this.failed.set(update.taskId, update.uid);
  }

  async flush(): Promise<void> {
    const delivered = [...this.delivered];
    const failed = [...this.failed];
    this.delivered = new Map();
    this.failed = new Map();
    const table = `\`${this.options.table ?? 'im_push_task'}\``;
    const id = `\`${this.options.taskIdColumn ?? 'task_id'}\``;
    const status = `\`${this.options.statusColumn ?? 'status'}\``;
    const size = this.options.maxBatchIds ?? 500;
    const { pending, submitted, delivered: DELIVERED, failed: FAILED } = TASK_STATUS;
    const toDelivered = `UPDATE ${table} SET ${status} = ${DELIVERED} WHERE ${id} IN (?) AND ${status} IN (${pending}, ${submitted}, ${FAILED})`;
    const toFailed = `UPDATE ${table} SET ${status} = ${FAILED} WHERE ${id} IN (?) AND ${status} IN (${pending}, ${submitted})`;
    const updates = [
      ...delivered.map(([taskId, uid]) => ({ taskId, uid, sql: toDelivered })),
      ...failed.map(([taskId, uid]) => ({ taskId, uid, sql: toFailed })),
    ];
    await eachShard(
      groupByShard(this.shards, updates, (u) => u.uid),
      async (shard, rows) => {
        try {
          // Deliveries first, as before sharding: a failure of the same flush never follows one.
          for (const sql of [toDelivered, toFailed]) {
            const ids = rows.filter((r) => r.sql === sql).map((r) => r.taskId);
            for (let i = 0; i < ids.length; i += size) await this.run(shard, sql, ids.slice(i, i + size));
          }
        } catch (error) {
          // Put this shard's updates back (unless newer ones arrived) for the next flush.
          for (const r of rows)
            if (r.sql === toDelivered) {
              this.delivered.set(r.taskId, r.uid);
              this.failed.delete(r.taskId);
            } else if (!this.delivered.has(r.taskId)) this.failed.set(r.taskId, r.uid);
          throw error;
        }
      },
    );
  }

  /** Transient errors are retried (sinks/mysql/errors.ts); an UPDATE by id carries no data that could be refused. */
  private async run(shard: number, sql: string, ids: string[]): Promise<void> {
    const pool = this.shards.shard(shard);
    await withMysqlRetry('im_push_task.status', 'im_push_task status update', this.options, () => pool.query(sql, [ids]));
  }
}
