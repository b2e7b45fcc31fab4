/**
 * The few ClickHouse calls migrations need, over the plain HTTP interface: it works the same on the
 * stack's 18.16 server and on current releases (no client-side settings the old server rejects).
 */
import { fetch } from 'undici';
import { PushError } from '../common/errors.ts';
import { tlsDispatcher, type TlsMaterial } from '../common/tls-files.ts';

export interface ClickHouseTarget {
  /** HTTP interface, e.g. http://127.0.0.1:8123. */
  readonly url: string;
  readonly database: string;
  readonly user?: string;
  readonly password?: string;
  /** The authorities an `https:` URL's certificate must chain to; absent: the system's. */
  readonly tls?: TlsMaterial;
}

/** Runs one statement; `inDatabase` false runs it outside the target database (CREATE DATABASE). Returns the response text. */
export async function clickhouseQuery(target: ClickHouseTarget, sql: string, inDatabase = true): Promise<string> {
  const url = new URL(target.url);
  if (inDatabase) url.searchParams.set('database', target.database);
  const headers: Record<string, string> = { 'content-type': 'text/plain; charset=utf-8' };
  headers['X-ClickHouse-User'] = target.user ?? 'default';
  if (target.password) headers['X-ClickHouse-Key'] = target.password;
  let response: Awaited<ReturnType<typeof fetch>>;
  try {
    const dispatcher = tlsDispatcher(target.tls);
    response = await fetch(url, { method: 'POST', body: sql, headers, ...(dispatcher ? { dispatcher } : {}) });
  } catch (error) {
    throw new PushError('CLICKHOUSE_UNREACHABLE', `ClickHouse at ${url.origin} is unreachable`, { retriable: true, cause: error });
  }
  const text = await response.text();
  if (!response.ok) {
    throw new PushError('CLICKHOUSE_QUERY_FAILED', `ClickHouse answered ${response.status}: ${text.slice(0, 500)}`, {
      retriable: response.status >= 500 && !/Code: \d+/.test(text),
    });
  }
  return text;
}

/** Quotes a ClickHouse identifier. */
export const chIdent = (name: string): string => '`' + name.replace(/`/g, '\\`') + '`';

/** Quotes a ClickHouse string literal. */
export const chString = (value: string): string => "'" + value.replace(/\\/g, '\\\\').replace(/'/g, "\\'") + "'";
