import type { ClickHouseClient } from '@clickhouse/client';

/**
 * The arrival-rate query (docs/design.md, "Stores"; docs/data.md), for `pushctl arrival` and the
 * data team:
 *
 *   arrival rate = |submitted (task, device) pairs the vendor accepted or reported delivered|
 *                  ÷ |submitted (task, device) pairs|
 *
 * with delivered-only (a delivered receipt) and unknown (accepted, no receipt yet) beside it.
 * Pairs are formed first (GROUP BY task, device[, vendor]) and then counted, so duplicate and
 * replayed rows never change a figure. Only events at or after `sinceSeconds` are read; a pair
 * counts when it was submitted in that range. No query parameters (ClickHouse 18.16): the only
 * value in the SQL text is an integer.
 */
export type ArrivalDimension = 'vendor' | 'app' | 'hour' | 'campaign' | 'sender';

export const ARRIVAL_DIMENSIONS: readonly ArrivalDimension[] = ['vendor', 'app', 'hour', 'campaign', 'sender'];

/** Business dimensions (migrations/clickhouse/006_business.sql): a pair takes them from its outcome rows; IM pairs (empty) are left out. */
const BUSINESS_COLUMN: Partial<Record<ArrivalDimension, string>> = { campaign: 'campaign_id', sender: 'sender' };

export interface ArrivalRow {
  /** Vendor, app id, the hour as 'YYYY-MM-DD hh:00:00' (UTC), campaign id or sender. */
  readonly key: string;
  readonly submitted: number;
  readonly arrived: number;
  readonly delivered: number;
  readonly unknown: number;
  /** arrived ÷ submitted (0 when nothing was submitted). */
  readonly arrivalRate: number;
  readonly deliveredRate: number;
  readonly unknownRate: number;
}

/** An outcome that reached the vendor; a failure that never reached it (reason vendor_unreachable) is not a submission. */
const SUBMISSION = "source = 'outcome' AND kind IN ('submitted', 'accepted', 'failed', 'dead_token', 'throttled') AND reason != 'vendor_unreachable'";

export function arrivalQuery(by: ArrivalDimension, sinceSeconds: number, appId?: string): string {
  if (!Number.isSafeInteger(sinceSeconds) || sinceSeconds < 0) throw new RangeError('sinceSeconds must be a non-negative integer');
  if (appId !== undefined && !/^[A-Za-z0-9._-]{1,128}$/.test(appId)) throw new RangeError('appId must be 1–128 of [A-Za-z0-9._-]');
  // 18.16 resolves aliases globally, so the app filter reads the table in a subquery where app_id is still the column.
  const source = appId === undefined ? 'push_events' : `(SELECT * FROM push_events WHERE app_id = '${appId}')`;
  // Per vendor a pair is (task, device, vendor): a device that fell back from one vendor to another
  // counts once under each. By app and hour a pair is (task, device), counted once.
  const pairKey = by === 'vendor' ? 'task_id, device_id, vendor' : 'task_id, device_id';
  const business = BUSINESS_COLUMN[by];
  const dimension =
    business !== undefined
      ? `pair_${business}`
      : by === 'vendor'
        ? 'vendor'
        : by === 'app'
          ? 'app_id'
          : "formatDateTime(toStartOfHour(first_submit), '%Y-%m-%d %H:00:00')";
  return `
SELECT
    ${dimension} AS key,
    count() AS submitted,
    sum(pair_arrived) AS arrived,
    sum(pair_delivered) AS delivered,
    sum(pair_accepted AND NOT pair_has_receipt) AS unknown
FROM
(
    SELECT
        ${pairKey},
        any(app_id) AS app_id,${business === undefined ? '' : `\n        max(${business}) AS pair_${business},`}
        minIf(event_time, ${SUBMISSION}) AS first_submit,
        max(${SUBMISSION}) AS pair_submitted,
        max(kind IN ('accepted', 'delivered')) AS pair_arrived,
        max(kind = 'accepted') AS pair_accepted,
        max(source = 'receipt' AND kind = 'delivered') AS pair_delivered,
        max(source = 'receipt') AS pair_has_receipt
    FROM ${source}
    WHERE event_time >= toDateTime(${sinceSeconds}) AND vendor != '' AND task_id != ''
    GROUP BY ${pairKey}
)
WHERE pair_submitted = 1${business === undefined ? '' : ` AND pair_${business} != ''`}
GROUP BY key
ORDER BY key`;
}

/** Arrival rows; `appId` restricts them to one app (its id is validated, so it is safe in the SQL text). */
export async function queryArrival(client: ClickHouseClient, by: ArrivalDimension, sinceSeconds: number, appId?: string): Promise<ArrivalRow[]> {
  const rs = await client.query({ query: arrivalQuery(by, sinceSeconds, appId), format: 'JSONEachRow' });
  const rows = await rs.json<{ key: string; submitted: string | number; arrived: string | number; delivered: string | number; unknown: string | number }>();
  return rows.map((r) => {
    const submitted = Number(r.submitted);
    const arrived = Number(r.arrived);
    const delivered = Number(r.delivered);
    const unknown = Number(r.unknown);
    const rate = (n: number) => (submitted === 0 ? 0 : n / submitted);
    return {
      key: String(r.key),
      submitted,
      arrived,
      delivered,
      unknown,
      arrivalRate: rate(arrived),
      deliveredRate: rate(delivered),
      unknownRate: rate(unknown),
    };
  });
}
