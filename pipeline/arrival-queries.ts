/**
 * The arrival numbers `pushctl arrival` prints (cli/commands/arrival.ts): the arrival rows read
 * from ClickHouse by vendor, app or hour (definition in docs/data.md), and the distinct total of
 * (task, device) pairs. Returns data; the table is formatted by the command.
 */
import type { ClickHouseClient } from '@clickhouse/client';
import { readEndpoints } from '../common/endpoints.ts';
import { ConfigError } from '../common/errors.ts';
import { ARRIVAL_DIMENSIONS, queryArrival, type ArrivalDimension, type ArrivalRow } from '../sinks/clickhouse/arrival-query.ts';
import { connectionFromEndpoints, createClickhouseClient } from '../sinks/clickhouse/client.ts';
import { parseDuration } from './duration.ts';

export interface ArrivalQueryOptions {
  /** How far back, e.g. `90m`, `24h`, `7d`, `2w` (default 24h). Pairs submitted in this range count. */
  readonly since?: string;
  /** Group rows by `vendor`, `app`, `hour`, `campaign` or `sender` (default vendor; the last two count business pushes only). */
  readonly by?: string;
  /** A ClickHouse client to use (default: one from PUSH_CLICKHOUSE_*). */
  readonly client?: ClickHouseClient;
  /** Clock, epoch ms. Default Date.now. */
  readonly now?: () => number;
}

export interface ArrivalCounts {
  readonly submitted: number;
  readonly arrived: number;
  readonly delivered: number;
  readonly unknown: number;
}

/** The arrival rows of a range, with what a table of them needs. */
export interface ArrivalReport {
  readonly by: ArrivalDimension;
  readonly rows: ArrivalRow[];
  /** The start of the range (whole seconds). */
  readonly since: Date;
  /** By vendor, when there are rows: each (task, device) pair once (distinctTotal of the rows by app). */
  readonly total?: ArrivalCounts;
}

/**
 * The total of distinct (task, device) pairs, from the rows by app (each pair belongs to one app).
 * By vendor a pair that fell back across vendors is in two rows, so their sum would count it twice.
 */
export function distinctTotal(byApp: readonly ArrivalRow[]): ArrivalCounts {
  return byApp.reduce(
    (t, r) => ({ submitted: t.submitted + r.submitted, arrived: t.arrived + r.arrived, delivered: t.delivered + r.delivered, unknown: t.unknown + r.unknown }),
    { submitted: 0, arrived: 0, delivered: 0, unknown: 0 },
  );
}

/**
 * The arrival rows of the range `since` back from now, grouped `by` vendor, app, hour, campaign or sender, read from
 * ClickHouse; by vendor also the distinct total (a device that fell back is in two vendors' rows).
 */
export async function readArrival(options: ArrivalQueryOptions = {}): Promise<ArrivalReport> {
  const by = (options.by ?? 'vendor') as ArrivalDimension;
  if (!ARRIVAL_DIMENSIONS.includes(by)) throw new ConfigError('--by', `expected ${ARRIVAL_DIMENSIONS.join(' | ')}, got ${JSON.stringify(options.by)}`);
  const sinceMs = parseDuration(options.since ?? '24h');
  const now = (options.now ?? Date.now)();
  const sinceSeconds = Math.floor((now - sinceMs) / 1000);
  const client = options.client ?? createClickhouseClient(connectionFromEndpoints(readEndpoints()));
  try {
    const rows = await queryArrival(client, by, sinceSeconds);
    const total = by === 'vendor' && rows.length > 0 ? distinctTotal(await queryArrival(client, 'app', sinceSeconds)) : undefined;
    return { by, rows, since: new Date(sinceSeconds * 1000), ...(total === undefined ? {} : { total }) };
  } finally {
    if (!options.client) await client.close();
  }
}
