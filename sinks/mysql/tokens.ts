import type { Pool, ResultSetHeader } from 'mysql2/promise';
import { PushError } from '../../common/errors.ts';
import { leavingOutRefusedRows, withMysqlRetry, type MysqlWriteListener } from './errors.ts';
import { eachShard, groupByShard, shardedPools, type ShardedPools } from './shards.ts';
import type { TokenRecordWriter, TokenRow } from '../../processors/token-lifecycle/lifecycle.ts';

/** Column names of im_push_token this writer fills (migrations/mysql/003_im_push_token.sql). */
export interface TokenColumns {
  readonly uid: string;
  readonly deviceId: string;
  readonly vendor: string;
  readonly platform: string;
  readonly appId: string;
  readonly token: string;
  /** 1 valid, 0 invalid. */
  readonly status: string;
  readonly invalidReason: string;
  /** DATETIME(3) of the client report. */
  readonly reportedAt: string;
  /** DATETIME(3) of the last report that confirmed the token (the same report time here). */
  readonly refreshedAt: string;
  /** DATETIME(3) of the invalidation, NULL while valid. */
  readonly invalidatedAt: string;
  /** DATETIME(3) of the last change; guards against an older change overwriting a newer one. */
  readonly changedAt: string;
}

export const DEFAULT_TOKEN_COLUMNS: TokenColumns = {
  uid: 'uid',
  deviceId: 'device_id',
  vendor: 'vendor',
  platform: 'platform',
  appId: 'app_id',
  token: 'token',
  status: 'status',
  invalidReason: 'invalid_reason',
  reportedAt: 'reported_at',
  refreshedAt: 'refreshed_at',
  invalidatedAt: 'invalidated_at',
  changedAt: 'changed_at',
};

export interface MysqlTokenWriterOptions {
  /** The one database (tests, a single-database deployment); or `shards`. */
  readonly pool?: Pool;
  /** The uid shards (sinks/mysql/shards.ts): each row goes to its uid's shard. */
  readonly shards?: ShardedPools;
  /** Default `im_push_token`. */
  readonly table?: string;
  readonly columns?: TokenColumns;
  /** Rows per INSERT statement. Default 500. */
  readonly maxBatchRows?: number;
  /** Retry delays while MySQL is unreachable, ms. Defaults 200 and 10 000. */
  readonly retryInitialDelayMs?: number;
  readonly retryMaxDelayMs?: number;
  readonly onRetry?: (error: PushError, attempt: number, delayMs: number) => void;
  /** Retries and rows left out (metrics). */
  readonly listener?: MysqlWriteListener;
}

const WRITER = 'im_push_token';

const toDate = (ms: number) => new Date(ms);

/**
 * Token rows to im_push_token, upserted on the unique key (device_id, vendor) in batches. The
 * token-lifecycle processor calls `upsert` only when a token's stored fields change; within one
 * flush the last change per (device_id, vendor) wins, and across flushes a row is only overwritten
 * by a change that is not older (`changed_at`), so a replay after a crash converges on the same
 * rows. `flush` retries transient MySQL errors and resolves once the rows are stored.
 * Tokens are secrets: errors never carry row values.
 */
export class MysqlTokenWriter implements TokenRecordWriter {
  private pending = new Map<string, TokenRow>();
  private readonly table: string;
  private readonly c: TokenColumns;
  private readonly maxBatchRows: number;
  private readonly shards: ShardedPools;

  constructor(private readonly options: MysqlTokenWriterOptions) {
    if (!options.shards && !options.pool) throw new Error('MysqlTokenWriter: a pool or shards');
    this.shards = options.shards ?? shardedPools([options.pool!]);
    this.table = options.table ?? 'im_push_token';
    this.c = options.columns ?? DEFAULT_TOKEN_COLUMNS;
    this.maxBatchRows = options.maxBatchRows ?? 500;
  }

  upsert(row: TokenRow): void {
    const key = `${row.device_id}\u001f${row.vendor}`;
    this.pending.delete(key); // keep insertion order = change order
    this.pending.set(key, row);
  }

  get pendingRows(): number {
    return this.pending.size;
  }

  async flush(): Promise<void> {
    const all = [...this.pending.values()];
    this.pending = new Map();
    // Each row to its uid's shard, the shards in parallel (a down shard holds up only its own rows).
    await eachShard(
      groupByShard(this.shards, all, (r) => r.uid),
      async (shard, rows) => {
        try {
          for (let i = 0; i < rows.length; i += this.maxBatchRows) await this.write(shard, rows.slice(i, i + this.maxBatchRows));
        } catch (error) {
          // Put unstored rows back (unless newer ones arrived meanwhile) so the next flush retries them.
          for (const row of rows) {
            const key = `${row.device_id}\u001f${row.vendor}`;
            if (!this.pending.has(key)) this.pending.set(key, row);
          }
          throw error;
        }
      },
    );
  }

  private async write(shard: number, rows: TokenRow[]): Promise<void> {
    const pool = this.shards.shard(shard);
    const c = this.c;
    const cols = [
      c.uid,
      c.deviceId,
      c.vendor,
      c.platform,
      c.appId,
      c.token,
      c.status,
      c.invalidReason,
      c.reportedAt,
      c.refreshedAt,
      c.invalidatedAt,
      c.changedAt,
    ];
    const newer = `VALUES(\`${c.changedAt}\`) >= \`${c.changedAt}\``;
    // changed_at must be assigned last: the IF() of the other columns reads the old value.
    const assignments = cols
      .filter((col) => col !== c.deviceId && col !== c.vendor && col !== c.changedAt)
      .concat(c.changedAt)
      .map((col) => `\`${col}\` = IF(${newer}, VALUES(\`${col}\`), \`${col}\`)`)
      .join(', ');
    const sql = `INSERT INTO \`${this.table}\` (${cols.map((col) => `\`${col}\``).join(', ')}) VALUES ? ON DUPLICATE KEY UPDATE ${assignments}`;
    const values = rows.map((r) => [
      r.uid,
      r.device_id,
      r.vendor,
      r.platform,
      r.app_id,
      r.token,
      r.state === 'VALID' ? 1 : 0,
      r.reason,
      toDate(r.reported_at),
      toDate(r.reported_at),
      r.state === 'INVALID' ? toDate(r.changed_at) : null,
      toDate(r.changed_at),
    ]);
    // Transient errors are retried (sinks/mysql/errors.ts). A data error refuses the whole batch:
    // it is written again row by row, and a row still refused is left out and reported (the
    // report that carried it was processed long ago; its token is never logged).
    const listener: MysqlWriteListener = {
      onRetry: (writer, code, attempt, delayMs) => {
        this.options.listener?.onRetry?.(writer, code, attempt, delayMs);
        this.options.onRetry?.(new PushError(`MYSQL_${code}`, `im_push_token upsert failed (${code})`, { retriable: true }), attempt, delayMs);
      },
    };
    await leavingOutRefusedRows(
      WRITER,
      this.options.listener,
      rows,
      () => withMysqlRetry(WRITER, 'im_push_token upsert', { ...this.options, listener }, () => pool.query<ResultSetHeader>(sql, [values])),
      (row) => this.write(shard, [row]),
    );
  }
}
