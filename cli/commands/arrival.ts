import type { ClickHouseClient } from '@clickhouse/client';
import type { ArrivalDimension, ArrivalRow } from '../../sinks/clickhouse/arrival-query.ts';
import { distinctTotal, readArrival, type ArrivalCounts } from '../../pipeline/arrival-queries.ts';

export interface ArrivalCommandOptions {
  /** How far back, e.g. `90m`, `24h`, `7d`, `2w` (default 24h). Pairs submitted in this range count. */
  readonly since?: string;
  /** Group rows by `vendor`, `app`, `hour`, `campaign` or `sender` (default vendor). */
  readonly by?: string;
  /** Where the table goes. Default process.stdout. */
  readonly out?: NodeJS.WritableStream;
  /** A ClickHouse client to use (default: one from PUSH_CLICKHOUSE_*). */
  readonly client?: ClickHouseClient;
  /** Clock, epoch ms. Default Date.now. */
  readonly now?: () => number;
}

/**
 * `pushctl arrival --since <duration> --by vendor|app|hour`: prints the arrival table read from
 * ClickHouse (definition in docs/data.md, the query in pipeline/arrival-queries.ts) and returns its rows.
 */
export async function arrival(options: ArrivalCommandOptions = {}): Promise<ArrivalRow[]> {
  const { out, ...query } = options;
  const report = await readArrival(query);
  (out ?? process.stdout).write(formatArrivalTable(report.by, report.rows, report.since, report.total));
  return report.rows;
}

const pct = (x: number) => `${(x * 100).toFixed(2)}%`;

/**
 * The arrival table. By app or hour the total row sums the rows; by vendor it is `vendorTotal`
 * (distinctTotal of the rows by app), as a device that fell back is in two vendors' rows.
 */
export function formatArrivalTable(by: ArrivalDimension, rows: readonly ArrivalRow[], since: Date, vendorTotal?: ArrivalCounts): string {
  const header = [by === 'hour' ? 'hour (UTC)' : by, 'submitted', 'arrived', 'arrival', 'delivered', 'delivered%', 'unknown', 'unknown%'];
  const line = (key: string, r: ArrivalCounts) => {
    const rate = (n: number) => (r.submitted === 0 ? 0 : n / r.submitted);
    return [
      key,
      String(r.submitted),
      String(r.arrived),
      pct(rate(r.arrived)),
      String(r.delivered),
      pct(rate(r.delivered)),
      String(r.unknown),
      pct(rate(r.unknown)),
    ];
  };
  const body = rows.map((r) => line(r.key, r));
  if (by !== 'vendor' && rows.length > 1) body.push(line('total', distinctTotal(rows)));
  if (by === 'vendor' && vendorTotal) body.push(line('total', vendorTotal));
  const table = [header, ...body];
  const widths = header.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  const render = (row: string[]) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  const out = [
    `arrival since ${since.toISOString().replace('T', ' ').slice(0, 19)} UTC, by ${by}`,
    render(header),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...body.map(render),
  ];
  if (rows.length === 0) out.push('(no submissions in this range)');
  else if (by === 'vendor' && vendorTotal)
    out.push("(total: each (task, device) pair once; a device that fell back to another vendor is in both vendors' rows)");
  return out.join('\n') + '\n';
}

export const arrivalHelp = `pushctl arrival [--since 24h] [--by vendor|app|hour|campaign|sender]

  the exact arrival rate from ClickHouse: distinct submitted (task, device) pairs the vendor
  accepted or reported delivered ÷ distinct submitted pairs, with delivered-only and unknown
  (no receipt yet) beside it (docs/data.md); by campaign or sender, business pushes only
  (docs/entry.md, "Accounting")`;

export async function arrivalCommand(args: string[]): Promise<number> {
  const option = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  await arrival({ since: option('--since') ?? '24h', by: option('--by') ?? 'vendor' });
  return 0;
}
