import type { Pool } from 'mysql2/promise';
import { ContractError, errorCode } from '../../common/errors.ts';
import { fitJsonPayload, type NotificationText } from '../vendors/text.ts';
import { vendorModuleOf } from '../vendors/modules.ts';
import { classifyMysqlError, isMysqlDataError, leavingOutRefusedRows, mysqlDataError, withMysqlRetry, type MysqlWriteListener } from './errors.ts';
import { eachShard, groupByShard, shardedPools, type ShardedPools } from './shards.ts';
import {
  TASK_STATUS,
  TaskStoreUnavailableError,
  type ChannelAnswer,
  type PushTaskLedger,
  type StoredTask,
  type TaskResult,
  type TaskRow,
  type TaskStatus,
} from '../../processors/fan-out/ledger.ts';

export interface MysqlPushTaskLedgerOptions {
  /** The one database (tests, a single-database deployment); or `shards`. */
  readonly pool?: Pool;
  /** The uid shards (sinks/mysql/shards.ts): each task's row goes to its uid's shard. */
  readonly shards?: ShardedPools;
  /** Default `im_push_task`. */
  readonly table?: string;
  /** Results are written as they are recorded; those a failed write put back are tried again this often, ms. Default 50. */
  readonly flushIntervalMs?: number;
  /** Rows per INSERT. Default 500. */
  readonly maxBatchRows?: number;
  /** Backoff while MySQL is unreachable, ms. Defaults 200 and 10 000. */
  readonly retryInitialDelayMs?: number;
  readonly retryMaxDelayMs?: number;
  /** Retries and rows left out (metrics). */
  readonly listener?: MysqlWriteListener;
}

const WRITER = 'im_push_task';

/** How long a shard whose claim failed is taken as down (its claims are refused without a query), ms. */
const SHARD_DOWN_MS = 1_000;

/** Widths of columns a vendor's answer fills (migrations/mysql/001_im_push_task.sql). */
const FAIL_CODE_CHARS = 64;
const MAX_ATTEMPTS = 65_535;
/** im_push_task.claims is a SMALLINT UNSIGNED (migrations/mysql/010_im_push_task_claims.sql). */
const MAX_CLAIMS = 65_535;

/**
 * Widths of the identifying columns, in characters (migrations/mysql/001_im_push_task.sql). The
 * claim's INSERT IGNORE would cut a longer value silently (a warning, not an error), so a task
 * that does not fit is refused here as the data error MySQL would raise in strict mode.
 */
const WIDTHS: ReadonlyArray<readonly [keyof TaskRow, string, number]> = [
  ['uid', 'uid', 64],
  ['convId', 'conv_id', 64],
  ['deviceId', 'device_id', 128],
  ['msgId', 'msg_id', 64],
  ['appId', 'app_id', 64],
  ['platform', 'platform', 16],
  ['collapseId', 'collapse_id', 64],
  ['kind', 'merge_kind', 16],
  ['taskId', 'task_id', 36],
];

/** The column a task's value overflows, if any. UTF-16 length first: code points are counted only when it is over. */
function overflowingColumn(task: TaskRow): string | undefined {
  for (const [field, column, width] of WIDTHS) {
    const value = String(task[field]);
    if (value.length > width && [...value].length > width) return column;
  }
  return undefined;
}

/** Largest stored payload, bytes (im_push_task.payload VARBINARY(1024), migrations/mysql/006_im_push_task_row.sql). */
export const TASK_PAYLOAD_MAX_BYTES = 1024;

const payloadJson = (t: NotificationText) => JSON.stringify({ title: t.title, body: t.body });

/**
 * im_push_task.payload (docs/data.md): the title and summary sent, as the JSON object
 * `{"title":…,"body":…}` in UTF-8, at most 1024 bytes. Text within the limit is stored exactly;
 * a longer one is cut between grapheme clusters and ends with an ellipsis (sinks/vendors/text.ts,
 * the cutting the vendor adapters use), never inside a character.
 */
export function encodeTaskPayload(text: NotificationText): Buffer {
  // Undefined only when an empty title and body do not fit, which 1024 bytes always leaves room for.
  const fitted = fitJsonPayload(text, TASK_PAYLOAD_MAX_BYTES, payloadJson);
  return Buffer.from(fitted?.json ?? payloadJson({ title: '', body: '' }), 'utf8');
}

/**
 * The title and summary as the adapter of `vendor` sends them (docs/vendors.md, "Payload limits"),
 * by its module's `sentText` (sinks/vendors/module.ts): OPPO, vivo and Xiaomi cut each field to their
 * own lengths, by grapheme clusters; APNs, FCM and HMS send them as given and cut only a whole payload
 * over their 4 KB, which a dispatch's summary (at most PUSH_SUMMARY_MAX_CHARS, 100) leaves to a title
 * of kilobytes alone.
 */
export function sentText(vendor: string, text: NotificationText): NotificationText {
  return vendorModuleOf(vendor)?.sentText(text) ?? { title: text.title, body: text.body };
}

/** The title and summary of a stored payload; null for a row written before the column existed or a value that does not parse. */
export function decodeTaskPayload(payload: Buffer | string | null): NotificationText | null {
  if (payload === null) return null;
  try {
    const parsed = JSON.parse(Buffer.isBuffer(payload) ? payload.toString('utf8') : payload) as Partial<NotificationText> | null;
    if (typeof parsed?.title !== 'string' || typeof parsed.body !== 'string') return null;
    return { title: parsed.title, body: parsed.body };
  } catch {
    return null;
  }
}

/** The badge fits INT UNSIGNED. */
const unreadCount = (n: number) => (Number.isFinite(n) ? Math.min(Math.max(Math.trunc(n), 0), 4_294_967_295) : 0);

/** The claim writes what is sent with the identifying columns (one INSERT IGNORE; collapse_key is the collapse id sent). */
const COLUMNS = 'task_id, uid, conv_id, seq, device_id, msg_id, app_id, platform, collapse_id, unread_cnt, payload, collapse_key, merge_kind';
const rowValues = (t: TaskRow, vendor: string) => [
  t.taskId,
  t.uid,
  t.convId,
  t.seq,
  t.deviceId,
  t.msgId,
  t.appId,
  t.platform,
  t.collapseId,
  unreadCount(t.unreadCnt),
  encodeTaskPayload(sentText(vendor, t)),
  t.collapseId,
  t.kind,
];

interface StoredRow {
  task_id: string;
  status: number;
  vendor: string;
  vendor_message_id: string | null;
  fail_code: string | null;
  channel_trail: string | null;
  attempts: number;
  claims: number;
}

/** The stored trail of earlier channels' answers; a value that does not parse counts as none. */
function parseTrail(text: string | null): ChannelAnswer[] {
  if (!text) return [];
  try {
    const parsed: unknown = JSON.parse(text);
    return Array.isArray(parsed) ? (parsed as ChannelAnswer[]) : [];
  } catch {
    return [];
  }
}

interface PendingClaim {
  readonly task: TaskRow;
  readonly resolve: (stored: StoredTask) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * `im_push_task` for the fan-out. Every row goes to its uid's shard (sinks/mysql/shards.ts); the
 * statements below run once per shard of the batch, the shards in parallel. With several shards, a
 * claim on a shard that fails transiently is not waited for: it rejects with TaskStoreUnavailableError
 * (the fan-out parks the dispatch) and the shard's claims are refused for SHARD_DOWN_MS, so a shard
 * that is down holds up only its own users. Claims made in one tick become one `INSERT` (status 0,
 * with the unread count, payload, collapse key and merge kind sent: docs/data.md) that counts a
 * second claim of a row still pending (`claims`), plus one `SELECT` of the stored rows only when
 * some row existed already. Results and the answers of tasks still pending are asked for at once
 * and become one `INSERT … ON DUPLICATE KEY UPDATE` per batch that never moves a row backwards (1
 * over 0 and 3; 3 only over 0; answers so far only over 0 with no more calls answered). Idempotent:
 * a replay writes the same values. Transient MySQL errors (outage, failover, lock waits) are waited
 * out with backoff; a row MySQL refuses as data fails only its own task's claim (sinks/mysql/errors.ts).
 */
export class MysqlPushTaskLedger implements PushTaskLedger {
  private claims: PendingClaim[] = [];
  private claimScheduled = false;
  private results = new Map<string, { task: TaskRow; result: TaskResult }>();
  private writing: Promise<void> = Promise.resolve();
  /** Results being written now, by task id. */
  private readonly inWrite = new Set<string>();
  /** Callers of `written`, by task id. */
  private readonly waiters = new Map<string, Array<{ resolve: () => void; reject: (error: unknown) => void }>>();
  private writeScheduled = false;
  /** A failed write's rows are written again after the flush interval (`retryLater`). */
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly table: string;
  private readonly shards: ShardedPools;
  /** Shards whose last claim failed transiently: until when their claims are refused (several shards only). */
  private readonly downUntil = new Map<number, number>();

  constructor(private readonly options: MysqlPushTaskLedgerOptions) {
    if (!options.shards && !options.pool) throw new Error('MysqlPushTaskLedger: a pool or shards');
    this.shards = options.shards ?? shardedPools([options.pool!]);
    this.table = `\`${(options.table ?? 'im_push_task').replace(/`/g, '')}\``;
  }

  claim(task: TaskRow): Promise<StoredTask> {
    const column = overflowingColumn(task);
    if (column !== undefined)
      return Promise.reject(new ContractError('MYSQL_ER_DATA_TOO_LONG', `im_push_task claim: MySQL would refuse the row (ER_DATA_TOO_LONG, column ${column})`));
    return new Promise((resolve, reject) => {
      this.claims.push({ task, resolve, reject });
      if (!this.claimScheduled) {
        this.claimScheduled = true;
        // writeClaimChunk settles every claim of its chunk (resolve or reject) and never throws.
        setImmediate(() => void this.writeClaims());
      }
    });
  }

  private async writeClaims(): Promise<void> {
    this.claimScheduled = false;
    const batch = this.claims;
    this.claims = [];
    const size = this.options.maxBatchRows ?? 500;
    // writeClaimChunk never throws: each shard's claims settle on their own.
    await eachShard(
      groupByShard(this.shards, batch, (c) => c.task.uid),
      async (shard, claims) => {
        for (let i = 0; i < claims.length; i += size) await this.writeClaimChunk(shard, claims.slice(i, i + size));
      },
    );
  }

  /**
   * One `INSERT` for the chunk: new rows are pending, claimed once; a row still pending counts one
   * claim more; a final row is left as it is. A data error (one task's row does not fit its
   * columns) fails the whole statement: the chunk is then claimed row by row, so only that task's
   * claim rejects (its dispatch goes to the DLQ) and the others go on. Transient errors are waited out.
   */
  private async writeClaimChunk(shard: number, chunk: PendingClaim[]): Promise<void> {
    try {
      const [inserted] = await this.claimQuery(
        shard,
        `INSERT INTO ${this.table} (${COLUMNS}) VALUES ? ` +
          `ON DUPLICATE KEY UPDATE claims = IF(status = ${TASK_STATUS.pending}, LEAST(claims + 1, ${MAX_CLAIMS}), claims)`,
        [chunk.map((c) => rowValues(c.task, c.task.firstVendor))],
      );
      // Every row new (the usual case): all are pending, and the claim took one round trip.
      // Otherwise some task was seen before (a replay, a takeover): read the stored rows.
      const allNew = /\bDuplicates: 0\b/.test((inserted as { info?: string }).info ?? '');
      const rows = allNew
        ? []
        : ((
            await this.claimQuery(
              shard,
              `SELECT task_id, status, vendor, vendor_message_id, fail_code, channel_trail, attempts, claims FROM ${this.table} WHERE task_id IN (?)`,
              [chunk.map((c) => c.task.taskId)],
            )
          )[0] as StoredRow[]);
      const stored = new Map(rows.map((r) => [r.task_id, r]));
      for (const c of chunk) {
        const r = stored.get(c.task.taskId);
        c.resolve(
          r === undefined
            ? { status: TASK_STATUS.pending, vendor: null, vendorMessageId: null, failCode: null, attempts: 0, trail: [], claims: 1 }
            : {
                status: r.status as TaskStatus,
                vendor: r.vendor || null,
                vendorMessageId: r.vendor_message_id,
                failCode: r.fail_code,
                attempts: r.attempts,
                trail: parseTrail(r.channel_trail),
                claims: r.claims,
              },
        );
      }
    } catch (error) {
      if (isMysqlDataError(error) && chunk.length > 1) {
        for (const c of chunk) await this.writeClaimChunk(shard, [c]);
        return;
      }
      for (const c of chunk) c.reject(error);
    }
  }

  record(task: TaskRow, result: TaskResult): void {
    const previous = this.results.get(task.taskId)?.result.status;
    // A submitted result wins over a failed one buffered for the same task, and either over answers so far.
    if (previous === TASK_STATUS.submitted && result.status !== TASK_STATUS.submitted) return;
    if (previous === TASK_STATUS.failed && result.status === TASK_STATUS.pending) return;
    this.results.set(task.taskId, { task, result });
    this.writeSoon();
  }

  /** One write for the results of this turn of the event loop; its error reaches the `written` waiters. */
  private writeSoon(): void {
    if (this.writeScheduled) return;
    this.writeScheduled = true;
    setImmediate(() => {
      this.writeScheduled = false;
      this.flush().catch(() => undefined);
    });
  }

  written(taskId: string): Promise<void> {
    if (!this.results.has(taskId) && !this.inWrite.has(taskId)) return Promise.resolve();
    this.writeSoon();
    return new Promise((resolve, reject) => {
      const waiting = this.waiters.get(taskId);
      if (waiting) waiting.push({ resolve, reject });
      else this.waiters.set(taskId, [{ resolve, reject }]);
    });
  }

  flush(): Promise<void> {
    // Serialise writers: a flush waits for the one in progress, then writes what is left.
    // The previous write's error was already returned to its caller; this one only waits for it to end.
    this.writing = this.writing.catch(() => undefined).then(() => this.writeResults());
    return this.writing;
  }

  private async writeResults(): Promise<void> {
    if (this.results.size === 0) return;
    const batch = [...this.results.values()];
    this.results = new Map();
    for (const { task } of batch) this.inWrite.add(task.taskId);
    const size = this.options.maxBatchRows ?? 500;
    await eachShard(
      groupByShard(this.shards, batch, (r) => r.task.uid),
      async (shard, rows) => {
        try {
          for (let i = 0; i < rows.length; i += size) await this.writeResultChunk(shard, rows.slice(i, i + size));
          this.settleWaiters(rows);
        } catch (error) {
          for (const { task, result } of rows) if (!this.results.has(task.taskId)) this.results.set(task.taskId, { task, result });
          this.settleWaiters(rows, error);
          this.retryLater();
          throw error;
        }
      },
    );
  }

  /** The rows' write ended: their `written` callers resolve (those re-recorded since wait for the next write), or reject with `error`. */
  private settleWaiters(rows: ReadonlyArray<{ task: TaskRow }>, error?: unknown): void {
    for (const { task } of rows) {
      this.inWrite.delete(task.taskId);
      if (error === undefined && this.results.has(task.taskId)) continue;
      const waiting = this.waiters.get(task.taskId);
      if (!waiting) continue;
      this.waiters.delete(task.taskId);
      for (const w of waiting)
        if (error === undefined) w.resolve();
        else w.reject(error);
    }
  }

  /**
   * One upsert for the chunk. A row MySQL refuses as data (its claim with the same identifying
   * columns was accepted, so only a vendor's answer can be at fault) is written row by row, and a
   * row still refused is left out and reported: its dispatch has already been answered, and
   * stopping the partition would not make the row fit.
   */
  private async writeResultChunk(shard: number, chunk: Array<{ task: TaskRow; result: TaskResult }>): Promise<void> {
    const rows = chunk.map(({ task, result }) => [
      ...rowValues(task, result.vendor),
      result.status,
      result.vendor,
      result.vendorMessageId,
      result.failCode?.slice(0, FAIL_CODE_CHARS) ?? null,
      result.trail.length > 0 ? JSON.stringify(result.trail) : null,
      Math.min(result.attempts, MAX_ATTEMPTS),
      result.status === TASK_STATUS.submitted ? new Date() : null,
    ]);
    // Assignments run left to right and see earlier ones, so `status` is updated last (`attempts`
    // before it keeps the condition as it was: set only where it held, to a value that holds it).
    const { pending, submitted, failed } = TASK_STATUS;
    const advance =
      `((status = ${pending} AND (VALUES(status) <> ${pending} OR VALUES(attempts) >= attempts)) ` +
      `OR (status = ${failed} AND VALUES(status) = ${submitted}))`;
    await leavingOutRefusedRows(
      WRITER,
      this.options.listener,
      chunk,
      () =>
        this.run(
          shard,
          `INSERT INTO ${this.table} (${COLUMNS}, status, vendor, vendor_message_id, fail_code, channel_trail, attempts, submitted_at) VALUES ? ` +
            `ON DUPLICATE KEY UPDATE vendor = IF(${advance}, VALUES(vendor), vendor), ` +
            `vendor_message_id = IF(${advance}, VALUES(vendor_message_id), vendor_message_id), ` +
            `fail_code = IF(${advance}, VALUES(fail_code), fail_code), ` +
            // The text as the vendor that answered last sent it (the claim stored the first channel's).
            `payload = IF(${advance}, VALUES(payload), payload), ` +
            `channel_trail = IF(${advance}, VALUES(channel_trail), channel_trail), ` +
            `attempts = IF(${advance}, VALUES(attempts), attempts), ` +
            `submitted_at = IF(${advance}, VALUES(submitted_at), submitted_at), ` +
            `status = IF(${advance}, VALUES(status), status)`,
          [rows],
        ),
      (one) => this.writeResultChunk(shard, [one]),
    );
  }

  private run(shard: number, sql: string, params: unknown[]): Promise<[unknown, unknown]> {
    const pool = this.shards.shard(shard);
    return withMysqlRetry(WRITER, 'im_push_task write', this.options, () => pool.query(sql, params) as Promise<[unknown, unknown]>);
  }

  /**
   * A claim's statement. On one database, transient errors are waited out (`run`). With several
   * shards, one attempt: a transient error marks the shard down for SHARD_DOWN_MS and rejects with
   * TaskStoreUnavailableError, as does any claim on a shard marked down, so its users' dispatches
   * wait parked instead of in flight ahead of other shards' users.
   */
  private async claimQuery(shard: number, sql: string, params: unknown[]): Promise<[unknown, unknown]> {
    if (this.shards.count === 1) return this.run(shard, sql, params);
    if (Date.now() < (this.downUntil.get(shard) ?? 0)) throw new TaskStoreUnavailableError(shard, 'SHARD_DOWN');
    try {
      return (await this.shards.shard(shard).query(sql, params)) as [unknown, unknown];
    } catch (error) {
      if (classifyMysqlError(error) === 'data') throw mysqlDataError('im_push_task write', error);
      this.downUntil.set(shard, Date.now() + SHARD_DOWN_MS);
      this.options.listener?.onRetry?.(WRITER, errorCode(error), 1, SHARD_DOWN_MS);
      throw new TaskStoreUnavailableError(shard, errorCode(error));
    }
  }

  /**
   * The rows of a failed write went back into the buffer: they are written again after the flush
   * interval. Dropping that write's error is safe: withMysqlRetry retried transient errors (telling
   * the listener), a failed write puts its rows back again, and the commit path's own flush()
   * rejects with it. Only then is there a timer: an idle ledger wakes nobody.
   */
  private retryLater(): void {
    if (this.retryTimer || this.closed) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (this.results.size > 0) this.flush().catch(() => undefined);
    }, this.options.flushIntervalMs ?? 50);
    this.retryTimer.unref();
  }

  /** Stops the background retries (call `flush` first to write what is buffered). */
  close(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
  }
}
