import type { ClickHouseClient } from '@clickhouse/client';
import { PushError, errorCode, errorMessage } from '../../common/errors.ts';
import { backoffDelay, sleep } from '../../common/retry.ts';
import { createClickhouseClient, type ClickhouseConnection } from './client.ts';
import type { PushEventRow } from './rows.ts';

/** Observes the writer. Methods must not block (they run on the insert path). */
export interface PushEventWriterListener {
  /** A batch is stored; `attempts` counts the failed tries before it, plus one. */
  batchStored?(rows: number, attempts: number): void;
  /** An insert failed; the writer waits `delayMs` and tries again (or gives up when not retriable). */
  insertFailed?(error: PushError, attempt: number, delayMs: number, willRetry: boolean): void;
}

export interface PushEventWriterOptions {
  readonly connection: ClickhouseConnection;
  /** Target table. Default `push_events`. */
  readonly table?: string;
  /** Most rows in one INSERT; also the buffer size at which the sink processor flushes. Default 5 000. */
  readonly maxBatchRows?: number;
  /** First retry delay, ms. Default 200. */
  readonly retryInitialDelayMs?: number;
  /** Longest retry delay, ms. Default 10 000. */
  readonly retryMaxDelayMs?: number;
  readonly listener?: PushEventWriterListener;
  /** Use this client instead of creating one (the writer then does not close it). */
  readonly client?: ClickHouseClient;
}

/**
 * ClickHouse error codes that another attempt cannot fix: the rows or the schema are wrong.
 * (6 CANNOT_PARSE_TEXT, 16 NO_SUCH_COLUMN_IN_TABLE, 26/27 CANNOT_PARSE_*, 53 TYPE_MISMATCH,
 * 60 UNKNOWN_TABLE, 62 SYNTAX_ERROR, 81 UNKNOWN_DATABASE, 117 INCORRECT_DATA, 192/193/516 auth.)
 */
const PERMANENT_CLICKHOUSE_CODES = new Set(['6', '16', '26', '27', '53', '60', '62', '81', '117', '192', '193', '516']);

/** Turns a client error into a PushError whose message names no credential or URL. */
export function classifyInsertError(error: unknown): PushError {
  if (error instanceof PushError) return error;
  const code = errorCode(error);
  const chCode = (error as { type?: string; code?: string }).code;
  if (error instanceof Error && error.constructor.name === 'ClickHouseError' && typeof chCode === 'string') {
    const permanent = PERMANENT_CLICKHOUSE_CODES.has(chCode);
    const firstLine = errorMessage(error).split('\n')[0]!.slice(0, 300);
    return new PushError(`CLICKHOUSE_${chCode}`, `ClickHouse rejected the insert: ${firstLine}`, { retriable: !permanent });
  }
  // Network errors (ECONNREFUSED, ECONNRESET, timeouts): the server may come back.
  return new PushError('CLICKHOUSE_UNAVAILABLE', `ClickHouse unreachable (${code})`, { retriable: true });
}

/**
 * A batched, at-least-once writer of `push_events` rows. `add` only buffers; `flush` resolves once
 * every row added before the call is stored in ClickHouse. While ClickHouse is down, `flush` keeps
 * retrying with exponential backoff and jitter and does not resolve, so a runtime that commits
 * source offsets only after `flush` (topology/api.ts) never commits rows that are not stored.
 * A retried insert may store a batch twice; that is harmless, because rows are deduplicated by
 * `event_id` and every published figure is an exact distinct count.
 *
 * `close()` stops the retrying: pending flushes reject with `CLICKHOUSE_WRITER_CLOSED` and their
 * rows stay unstored (their offsets are not committed, so a restart replays them).
 */
export class PushEventWriter {
  readonly maxBatchRows: number;
  private readonly client: ClickHouseClient;
  private readonly ownsClient: boolean;
  private readonly table: string;
  private readonly initialDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly listener: PushEventWriterListener;
  private readonly closing = new AbortController();
  private buffer: PushEventRow[] = [];
  private tail: Promise<void> = Promise.resolve();
  private stored = 0;

  constructor(options: PushEventWriterOptions) {
    this.client = options.client ?? createClickhouseClient(options.connection);
    this.ownsClient = options.client === undefined;
    this.table = options.table ?? 'push_events';
    this.maxBatchRows = options.maxBatchRows ?? 5_000;
    this.initialDelayMs = options.retryInitialDelayMs ?? 200;
    this.maxDelayMs = options.retryMaxDelayMs ?? 10_000;
    this.listener = options.listener ?? {};
  }

  /** Rows added but not yet handed to a flush. */
  get bufferedRows(): number {
    return this.buffer.length;
  }

  /** Rows stored since the writer was created (a retried batch counts once). */
  get storedRows(): number {
    return this.stored;
  }

  add(row: PushEventRow): void {
    if (this.closing.signal.aborted) throw new PushError('CLICKHOUSE_WRITER_CLOSED', 'the ClickHouse writer is closed');
    this.buffer.push(row);
  }

  /**
   * Stores every row added before this call. Flushes run one after another in call order; a
   * flush resolves only after its own rows and every earlier flush's rows are stored.
   */
  flush(): Promise<void> {
    const rows = this.buffer;
    this.buffer = [];
    const run = this.tail.then(() => this.store(rows));
    // A failed flush must not poison later ones: its caller gets the error (run), its rows go back to the buffer's front.
    this.tail = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    this.closing.abort(new PushError('CLICKHOUSE_WRITER_CLOSED', 'the ClickHouse writer is closed'));
    await this.tail;
    if (this.ownsClient) await this.client.close();
  }

  private async store(rows: PushEventRow[]): Promise<void> {
    for (let start = 0; start < rows.length; start += this.maxBatchRows) {
      const batch = rows.slice(start, start + this.maxBatchRows);
      try {
        await this.insertWithRetry(batch);
      } catch (error) {
        this.buffer = rows.slice(start).concat(this.buffer);
        throw error;
      }
    }
  }

  private async insertWithRetry(batch: PushEventRow[]): Promise<void> {
    const signal = this.closing.signal;
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) throw signal.reason;
      try {
        await this.client.insert({ table: this.table, values: batch, format: 'JSONEachRow', abort_signal: signal });
        this.stored += batch.length;
        this.listener.batchStored?.(batch.length, attempt);
        return;
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        const failure = classifyInsertError(error);
        const delayMs = backoffDelay(attempt, this.initialDelayMs, this.maxDelayMs);
        this.listener.insertFailed?.(failure, attempt, delayMs, failure.retriable);
        if (!failure.retriable) throw failure;
        await sleep(delayMs, signal);
      }
    }
  }
}
