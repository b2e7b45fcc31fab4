import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError } from '../../common/errors.ts';

/**
 * What every vendor's entry of the apps file holds (docs/vendors.md), and the reader each vendor
 * module's `parseConfig` reads its own fields with. Every error names the field, e.g.
 * `apps[1].vendors.apns.keyId`.
 */
export interface VendorCommon {
  /** Override of the vendor's production base URL (emulators, proxies). */
  readonly baseUrl?: string;
  /**
   * Connections per origin. APNs: HTTP/2 connections in the pool (each multiplexes many
   * streams), default 2. The HTTP/1.1 vendors answer one request per connection at a time, so
   * their default is 64. Range 1–64.
   */
  readonly connections: number;
  /** Most submissions per second for this (vendor, app). Default 3 000, range 1–100 000. */
  readonly ratePerSecond: number;
  /** Most submit calls in flight at once for this (vendor, app). Default 64, range 1–10 000. */
  readonly concurrency: number;
  /** Time allowed for one vendor answer, ms. Default 10 000. */
  readonly timeoutMs: number;
}

/** One object of the apps file, as parsed JSON. */
export type RawConfig = Record<string, unknown>;

/** Default connections per origin: APNs multiplexes streams over HTTP/2, the others use HTTP/1.1. */
export const HTTP2_CONNECTIONS = 2;
export const HTTP1_CONNECTIONS = 64;

/** Reads fields of the apps file; `…File` secrets resolve against the file's folder. */
export class ConfigReader {
  constructor(private readonly baseDir: string) {}

  obj(v: unknown, key: string): RawConfig {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new ConfigError(key, 'expected an object');
    return v as RawConfig;
  }

  str(o: RawConfig, field: string, key: string, fallback?: string): string {
    const v = o[field];
    if (v === undefined && fallback !== undefined) return fallback;
    if (typeof v !== 'string' || v.trim() === '') throw new ConfigError(`${key}.${field}`, 'required non-empty string');
    return v;
  }

  optStr(o: RawConfig, field: string, key: string): string | undefined {
    return o[field] === undefined ? undefined : this.str(o, field, key);
  }

  int(o: RawConfig, field: string, key: string, fallback: number, min: number, max: number): number {
    const v = o[field] ?? fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      throw new ConfigError(`${key}.${field}`, `must be an integer within [${min}, ${max}], got ${JSON.stringify(v)}`);
    }
    return v;
  }

  oneOf<T extends string>(o: RawConfig, field: string, key: string, fallback: T, allowed: readonly T[]): T {
    const v = o[field] ?? fallback;
    if (!allowed.includes(v as T)) throw new ConfigError(`${key}.${field}`, `expected one of ${allowed.join(' | ')}, got ${JSON.stringify(v)}`);
    return v as T;
  }

  /** A secret given inline as `field` or as a file path in `fieldFile`. */
  secret(o: RawConfig, field: string, key: string): string {
    if (o[field] !== undefined) return this.str(o, field, key);
    const file = o[`${field}File`];
    if (typeof file !== 'string' || file === '') throw new ConfigError(`${key}.${field}`, `required (inline, or a path in ${field}File)`);
    try {
      return readFileSync(resolve(this.baseDir, file), 'utf8');
    } catch (error) {
      throw new ConfigError(`${key}.${field}File`, `cannot read ${file}: ${(error as Error).message}`);
    }
  }

  /** The bytes of a binary file named by `field` (a PKCS#12 bundle), relative to the apps file; undefined when absent. */
  binaryFile(o: RawConfig, field: string, key: string): Buffer | undefined {
    const file = o[field];
    if (file === undefined) return undefined;
    if (typeof file !== 'string' || file === '') throw new ConfigError(`${key}.${field}`, 'expected a file path');
    try {
      return readFileSync(resolve(this.baseDir, file));
    } catch (error) {
      throw new ConfigError(`${key}.${field}`, `cannot read ${file}: ${(error as Error).message}`);
    }
  }

  /** Whether `field` is given inline or as `fieldFile`. */
  has(o: RawConfig, field: string): boolean {
    return o[field] !== undefined || o[`${field}File`] !== undefined;
  }

  url(o: RawConfig, field: string, key: string): string | undefined {
    const v = this.optStr(o, field, key);
    if (v === undefined) return undefined;
    try {
      const u = new URL(v);
      if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new Error('not http(s)');
    } catch {
      throw new ConfigError(`${key}.${field}`, `expected an http(s) URL, got ${JSON.stringify(v)}`);
    }
    return v;
  }

  /** The fields every vendor entry has; `defaultConnections` is the vendor's transport's default. */
  common(o: RawConfig, key: string, defaultConnections = HTTP1_CONNECTIONS): VendorCommon {
    const baseUrl = this.url(o, 'baseUrl', key);
    return {
      ...(baseUrl === undefined ? {} : { baseUrl }),
      connections: this.int(o, 'connections', key, defaultConnections, 1, 64),
      ratePerSecond: this.int(o, 'ratePerSecond', key, 3000, 1, 100_000),
      concurrency: this.int(o, 'concurrency', key, 64, 1, 10_000),
      timeoutMs: this.int(o, 'timeoutMs', key, 10_000, 100, 120_000),
    };
  }
}

/** `o` without its undefined fields (an optional field left out of the apps file stays absent). */
export const withoutUndefined = <T extends object>(o: T): T => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

/** `text` parsed as JSON; a ConfigError naming `key` when it is not. */
export function jsonSecret(text: string, key: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ConfigError(key, 'the file is not JSON');
  }
}
