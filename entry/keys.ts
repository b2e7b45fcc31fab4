/**
 * API keys of the HTTP entry (migrations/mysql/008_business_keys.sql): one or more per business.
 * A key reads `pk_<key_id>.<secret>`; only sha256(secret) is stored, so the key is shown once, when
 * `pushctl entry keys add` makes it, and a database dump does not hold one. Keys are never logged:
 * the entry logs the key id at most.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Pool, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { ConfigError } from '../common/errors.ts';

export interface BusinessKey {
  readonly keyId: string;
  readonly business: string;
  /** The key's own rate limit; null: PUSH_ENTRY_KEY_REQUESTS_PER_SECOND. */
  readonly requestsPerSecond: number | null;
  readonly createdAt: Date;
  readonly revokedAt: Date | null;
}

const KEY = /^pk_([0-9a-f]{16})\.([A-Za-z0-9_-]{43})$/;
const BUSINESS = /^[A-Za-z0-9._-]{1,64}$/;
/** Hashed in place of an unknown key's stored hash, so an unknown key id costs what a known one does. */
const NO_SECRET = createHash('sha256').update('no-such-key').digest();

function sha256(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

export class ApiKeys {
  private readonly cache = new Map<string, { row: { key: BusinessKey; hash: Buffer } | undefined; until: number }>();

  /** `cacheMs`: how long a key row (or its absence) is remembered; a revocation takes effect within it. */
  constructor(
    private readonly pool: Pool,
    private readonly cacheMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Makes a key for `business` and returns it: the only time it is seen. */
  async create(business: string, requestsPerSecond: number | null = null): Promise<{ key: string; keyId: string }> {
    if (!BUSINESS.test(business)) throw new ConfigError('business', 'expected 1–64 of [A-Za-z0-9._-]');
    if (requestsPerSecond !== null && (!Number.isSafeInteger(requestsPerSecond) || requestsPerSecond < 1 || requestsPerSecond > 1_000_000))
      throw new ConfigError('--rate', 'expected an integer in [1, 1000000]');
    const keyId = randomBytes(8).toString('hex');
    const secret = randomBytes(32).toString('base64url');
    await this.pool.query('INSERT INTO push_business_key (key_id, business, secret_sha256, requests_per_second, created_at) VALUES (?, ?, ?, ?, ?)', [
      keyId,
      business,
      sha256(secret),
      requestsPerSecond,
      new Date(this.now()),
    ]);
    return { key: `pk_${keyId}.${secret}`, keyId };
  }

  /** The key's business when `presented` is a valid, unrevoked key; undefined otherwise. */
  async authenticate(presented: string): Promise<BusinessKey | undefined> {
    const m = KEY.exec(presented);
    const row = m ? await this.row(m[1]!) : undefined;
    const matches = timingSafeEqual(sha256(m?.[2] ?? ''), row?.hash ?? NO_SECRET);
    return matches && row && row.key.revokedAt === null ? row.key : undefined;
  }

  /** Revokes a key; false when there is no such key. */
  async revoke(keyId: string): Promise<boolean> {
    const [result] = await this.pool.query<ResultSetHeader>('UPDATE push_business_key SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL', [
      new Date(this.now()),
      keyId,
    ]);
    this.cache.delete(keyId);
    return result.affectedRows > 0;
  }

  /** Every key (of one business), oldest first; no secret is ever returned. */
  async list(business?: string): Promise<BusinessKey[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT key_id, business, requests_per_second, created_at, revoked_at, secret_sha256 FROM push_business_key
       ${business === undefined ? '' : 'WHERE business = ?'} ORDER BY created_at, key_id`,
      business === undefined ? [] : [business],
    );
    return rows.map((r) => toKey(r).key);
  }

  private async row(keyId: string): Promise<{ key: BusinessKey; hash: Buffer } | undefined> {
    const now = this.now();
    const cached = this.cache.get(keyId);
    if (cached && cached.until > now) return cached.row;
    const [rows] = await this.pool.query<RowDataPacket[]>(
      'SELECT key_id, business, requests_per_second, created_at, revoked_at, secret_sha256 FROM push_business_key WHERE key_id = ?',
      [keyId],
    );
    const row = rows[0] ? toKey(rows[0]) : undefined;
    if (this.cache.size >= 10_000) this.cache.clear();
    this.cache.set(keyId, { row, until: now + this.cacheMs });
    return row;
  }
}

function toKey(r: RowDataPacket): { key: BusinessKey; hash: Buffer } {
  return {
    key: {
      keyId: r.key_id as string,
      business: r.business as string,
      requestsPerSecond: r.requests_per_second === null ? null : Number(r.requests_per_second),
      createdAt: r.created_at as Date,
      revokedAt: (r.revoked_at as Date | null) ?? null,
    },
    hash: r.secret_sha256 as Buffer,
  };
}
