import { createHash } from 'node:crypto';
import type { Pool, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { PushError, errorCode } from '../common/errors.ts';

/**
 * What a signed HMS callback's nonce says: `new` (first time), `duplicate` (the same nonce with the
 * same body: a vendor retry, accepted) or `replayed` (the same nonce with another body: a captured
 * header on a forged body, refused). The HMS signature covers timestamp, nonce and user name, not
 * the body (sinks/vendors/hms/receipts.ts), so this memory is what stops a replay within the signature's
 * freshness window.
 */
export type NonceVerdict = 'new' | 'duplicate' | 'replayed';

/**
 * Remembers nonces for `ttlMs`. `scope` separates apps (a nonce is only meaningful for the
 * credentials that signed it). Implementations must be atomic across every receiver that shares
 * them: of two concurrent first uses of one nonce with different bodies, exactly one is `new`.
 */
export interface NonceStore {
  check(scope: string, nonce: string, body: Buffer, nowMs: number): Promise<NonceVerdict>;
  close(): Promise<void>;
}

const sha256 = (...parts: Array<string | Buffer>): Buffer => {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest();
};

/** The nonce's key: its scope and value hashed, so any header bytes fit the column. */
const nonceKey = (scope: string, nonce: string): Buffer => sha256(scope, '\n', nonce);

/**
 * One process's memory (tests, a single receiver in development). Not shared: a second receiver
 * or a restart forgets, so deployments use `MysqlNonceStore`.
 */
export class MemoryNonceStore implements NonceStore {
  private readonly seen = new Map<string, { bodyHash: string; expiresAt: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 100_000,
  ) {}

  async check(scope: string, nonce: string, body: Buffer, nowMs: number): Promise<NonceVerdict> {
    // Insertion order is expiry order (fixed ttl), so stop at the first live entry.
    for (const [key, entry] of this.seen) {
      if (entry.expiresAt > nowMs) break;
      this.seen.delete(key);
    }
    const key = nonceKey(scope, nonce).toString('hex');
    const bodyHash = sha256(body).toString('hex');
    const earlier = this.seen.get(key);
    if (earlier) return earlier.bodyHash === bodyHash ? 'duplicate' : 'replayed';
    if (this.seen.size >= this.maxEntries) {
      const oldest = this.seen.keys().next().value;
      if (oldest !== undefined) this.seen.delete(oldest);
    }
    this.seen.set(key, { bodyHash, expiresAt: nowMs + this.ttlMs });
    return 'new';
  }

  async close(): Promise<void> {}
}

export interface MysqlNonceStoreOptions {
  readonly pool: Pool;
  /** How long a nonce is remembered, ms: at least twice the signature skew (a header is fresh for ±skew). */
  readonly ttlMs: number;
  /** Default `push_receipt_nonce` (migrations/mysql/005_push_receipt_nonce.sql). */
  readonly table?: string;
  /** Per statement, ms; a slower MySQL fails the check (the callback gets 503 and the vendor retries). Default 2 000. */
  readonly queryTimeoutMs?: number;
  /** How often expired rows are deleted, ms (each receiver sweeps; the deletes are idempotent). Default 60 000. */
  readonly sweepIntervalMs?: number;
}

/**
 * Nonces in a MySQL table shared by every receiver, so a header replayed on another replica or
 * after a restart is refused. The primary key is the arbiter: the first INSERT of a nonce wins,
 * every later one reads the winner's body hash. Rows carry their expiry and are swept.
 */
export class MysqlNonceStore implements NonceStore {
  private readonly table: string;
  private readonly timeout: number;
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly options: MysqlNonceStoreOptions) {
    this.table = `\`${options.table ?? 'push_receipt_nonce'}\``;
    this.timeout = options.queryTimeoutMs ?? 2_000;
    // Best-effort: a failed sweep leaves expired rows for the next one, and check() never counts an expired row.
    this.sweeper = setInterval(() => void this.sweep(Date.now()).catch(() => undefined), options.sweepIntervalMs ?? 60_000);
    this.sweeper.unref();
  }

  async check(scope: string, nonce: string, body: Buffer, nowMs: number): Promise<NonceVerdict> {
    const key = nonceKey(scope, nonce);
    const bodyHash = sha256(body);
    try {
      // A new nonce, the common case, costs one INSERT; a taken one is read, and an expired one
      // (not yet swept) is deleted and the INSERT tried once more. A live row (another replica's)
      // is never touched.
      for (let attempt = 0; ; attempt++) {
        try {
          await this.options.pool.query<ResultSetHeader>(
            { sql: `INSERT INTO ${this.table} (nonce_hash, body_hash, expires_at_ms) VALUES (?, ?, ?)`, timeout: this.timeout },
            [key, bodyHash, nowMs + this.options.ttlMs],
          );
          return 'new';
        } catch (error) {
          if (errorCode(error) !== 'ER_DUP_ENTRY') throw error;
        }
        const [rows] = await this.options.pool.query<RowDataPacket[]>(
          { sql: `SELECT body_hash, expires_at_ms FROM ${this.table} WHERE nonce_hash = ?`, timeout: this.timeout },
          [key],
        );
        const stored = rows[0] as { body_hash: Buffer; expires_at_ms: number | string } | undefined;
        if (stored && Number(stored.expires_at_ms) > nowMs) return bodyHash.equals(stored.body_hash) ? 'duplicate' : 'replayed';
        // Taken and then gone or expired twice in a row: answer as for a replay (the vendor retries).
        if (attempt > 0) return 'replayed';
        if (stored)
          await this.options.pool.query({ sql: `DELETE FROM ${this.table} WHERE nonce_hash = ? AND expires_at_ms <= ?`, timeout: this.timeout }, [key, nowMs]);
      }
    } catch (error) {
      throw new PushError('RECEIPT_NONCE_STORE', `HMS nonce check failed (${errorCode(error)})`, { retriable: true, cause: error });
    }
  }

  /** Deletes rows expired by `nowMs`, at most 10 000 per call. */
  async sweep(nowMs: number): Promise<number> {
    const [result] = await this.options.pool.query<ResultSetHeader>(
      { sql: `DELETE FROM ${this.table} WHERE expires_at_ms <= ? LIMIT 10000`, timeout: this.timeout },
      [nowMs],
    );
    return result.affectedRows;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
  }
}
