import { ContractError, PushError, errorCode } from '../../common/errors.ts';
import { backoffDelay, sleep } from '../../common/retry.ts';

/**
 * How every MySQL writer of the pipeline treats an error (docs/design.md, "MySQL"):
 *
 * - `data`: the row itself is wrong for its column (too long, out of range, NULL where none is
 *   allowed, a truncated or unconvertible value, a failed CHECK). Another attempt gives the same
 *   answer, so the record that carried the row goes to the DLQ with the reason (a ContractError).
 * - `transient`: everything else — connection lost, refused or reset, DNS, too many connections,
 *   lock wait timeout, deadlock, server shutdown, query interrupted, read-only after a failover,
 *   access denied while credentials rotate, and codes this table does not know. Retried with
 *   exponential backoff and jitter for as long as it takes: a write path never crashes the worker
 *   and commits no Kafka offsets meanwhile. An unknown code (a schema not migrated, a bug) stalls
 *   the partition visibly in the retry metric rather than losing records.
 */
export type MysqlErrorClass = 'transient' | 'data';

/** Error codes (mysql2's `code`) of rows a retry cannot fix. */
const DATA_CODES = new Set([
  'ER_DATA_TOO_LONG', // 1406
  'ER_WARN_DATA_OUT_OF_RANGE', // 1264
  'ER_DATA_OUT_OF_RANGE', // 1690
  'ER_BAD_NULL_ERROR', // 1048
  'ER_WARN_NULL_TO_NOTNULL', // 1263
  'ER_NO_DEFAULT_FOR_FIELD', // 1364
  'ER_TRUNCATED_WRONG_VALUE', // 1292
  'ER_TRUNCATED_WRONG_VALUE_FOR_FIELD', // 1366 (e.g. a 4-byte character into a 3-byte column)
  'WARN_DATA_TRUNCATED', // 1265
  'ER_WRONG_VALUE_COUNT_ON_ROW', // 1136
  'ER_INVALID_JSON_TEXT', // 3140
  'ER_CANNOT_CONVERT_STRING', // 3854
  'ER_CONSTRAINT_FAILED', // 4025 (MariaDB CHECK)
  'ER_CHECK_CONSTRAINT_VIOLATED', // 3819 (MySQL CHECK)
  'ER_DIVISION_BY_ZERO', // 1365
]);

/** The same by server errno, for drivers or proxies that pass the number without mysql2's name. */
const DATA_ERRNOS = new Set([1406, 1264, 1690, 1048, 1263, 1364, 1292, 1366, 1265, 1136, 3140, 3854, 4025, 3819, 1365]);

export function classifyMysqlError(error: unknown): MysqlErrorClass {
  if (DATA_CODES.has(errorCode(error))) return 'data';
  const errno = (error as { errno?: unknown } | null)?.errno;
  return typeof errno === 'number' && DATA_ERRNOS.has(errno) ? 'data' : 'transient';
}

/**
 * A data error as a ContractError the runtime routes to the DLQ. The message names the code and
 * the column only: MySQL's own text can quote the value (a token), which must not reach logs.
 */
export function mysqlDataError(what: string, error: unknown): ContractError {
  const code = errorCode(error);
  const column = /column '([^']{1,64})'/.exec((error as Error | undefined)?.message ?? '')?.[1];
  return new ContractError(`MYSQL_${code}`, `${what}: MySQL refused the row (${code}${column ? `, column ${column}` : ''})`);
}

/** Non-blocking observer of the MySQL writers (metrics, logs). */
export interface MysqlWriteListener {
  /** A transient error; the write is tried again after `delayMs`. */
  onRetry?(writer: string, code: string, attempt: number, delayMs: number): void;
  /** A row refused as a data error that could not be routed to its record's DLQ entry and was left out. */
  onDataError?(writer: string, code: string): void;
}

export interface MysqlRetryOptions {
  /** Backoff before the second attempt, ms (doubling, jittered). Default 200. */
  readonly retryInitialDelayMs?: number;
  /** Longest single wait, ms. Default 10 000. */
  readonly retryMaxDelayMs?: number;
  readonly listener?: MysqlWriteListener;
}

/**
 * Runs one statement until it succeeds: transient errors are retried with backoff (never given
 * up: the caller's commit waits), a data error rejects with a ContractError naming `what`.
 */
export async function withMysqlRetry<T>(writer: string, what: string, options: MysqlRetryOptions, statement: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await statement();
    } catch (error) {
      if (error instanceof PushError) throw error; // not from MySQL: the caller's own failure
      if (classifyMysqlError(error) === 'data') throw mysqlDataError(what, error);
      const delayMs = backoffDelay(attempt, options.retryInitialDelayMs ?? 200, options.retryMaxDelayMs ?? 10_000);
      options.listener?.onRetry?.(writer, errorCode(error), attempt, delayMs);
      await sleep(delayMs);
    }
  }
}

/** True for the ContractError of a MySQL data error (`withMysqlRetry`). */
export function isMysqlDataError(error: unknown): error is ContractError {
  return error instanceof ContractError && error.code.startsWith('MYSQL_');
}

/**
 * Runs `write`, a statement of several rows. A data error refuses the whole statement, so then each
 * row is written again alone by `writeOne`; a lone row still refused is left out and its error code
 * reported to `listener.onDataError` under `writer` (its record was processed before it got here,
 * and stopping the partition would not make the row fit). Other errors are thrown.
 */
export async function leavingOutRefusedRows<T>(
  writer: string,
  listener: MysqlWriteListener | undefined,
  rows: readonly T[],
  write: () => Promise<unknown>,
  writeOne: (row: T) => Promise<void>,
): Promise<void> {
  try {
    await write();
  } catch (error) {
    if (!isMysqlDataError(error)) throw error;
    if (rows.length > 1) {
      for (const row of rows) await writeOne(row);
      return;
    }
    listener?.onDataError?.(writer, errorCode(error));
  }
}
