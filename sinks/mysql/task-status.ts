import type { Pool } from 'mysql2/promise';
import { withMysqlRetry, type MysqlWriteListener } from './errors.ts';
import type { TaskStatusUpdate, TaskStatusWriter } from '../../processors/receipt-join/records.ts';
import { TASK_STATUS } from '../../processors/model/task-status.ts';

export interface MysqlTaskStatusWriterOptions {
  readonly pool: Pool;
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
 * merged (4) tasks stay merged. Idempotent: replays set the same values. `flush` retries transient
 * MySQL errors and resolves once every buffered update is applied.
 */
export class MysqlTaskStatusWriter implements TaskStatusWriter {
  private delivered = new Set<string>();
  private failed = new Set<string>();

  constructor(private readonly options: MysqlTaskStatusWriterOptions) {}

  update(update: TaskStatusUpdate): void {
    if (update.status === TASK_STATUS.delivered) {
      this.delivered.add(update.taskId);
      this.failed.delete(update.taskId);
    } else if (!this.delivered.has(update.taskId)) this.failed.add(update.taskId);
  }

  async flush(): Promise<void> {
    const delivered = [...this.delivered];
    const failed = [...this.failed];
    this.delivered = new Set();
    this.failed = new Set();
    const table = `\`${this.options.table ?? 'im_push_task'}\``;
    const id = `\`${this.options.taskIdColumn ?? 'task_id'}\``;
    const status = `\`${this.options.statusColumn ?? 'status'}\``;
    const size = this.options.maxBatchIds ?? 500;
    try {
      const { pending, submitted, delivered: DELIVERED, failed: FAILED } = TASK_STATUS;
      for (let i = 0; i < delivered.length; i += size) {
        await this.run(
          `UPDATE ${table} SET ${status} = ${DELIVERED} WHERE ${id} IN (?) AND ${status} IN (${pending}, ${submitted}, ${FAILED})`,
          delivered.slice(i, i + size),
        );
      }
      for (let i = 0; i < failed.length; i += size)
        await this.run(`UPDATE ${table} SET ${status} = ${FAILED} WHERE ${id} IN (?) AND ${status} IN (${pending}, ${submitted})`, failed.slice(i, i + size));
    } catch (error) {
      for (const t of delivered) this.delivered.add(t);
      for (const t of failed) if (!this.delivered.has(t)) this.failed.add(t);
      throw error;
    }
  }

  /** Transient errors are retried (sinks/mysql/errors.ts); an UPDATE by id carries no data that could be refused. */
  private async run(sql: string, ids: string[]): Promise<void> {
    await withMysqlRetry('im_push_task.status', 'im_push_task status update', this.options, () => this.options.pool.query(sql, [ids]));
  }
}
