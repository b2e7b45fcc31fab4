/**
 * What GET /v1/campaigns/{id} answers (docs/entry.md): the expansion's own counts from MySQL
 * (push_campaign, written by processors/campaigns/expansion.ts) and the campaign's accounting from
 * ClickHouse push_events by campaign id: users suppressed or dropped by reason, (task, device)
 * pairs submitted and arrived (the arrival definition of docs/data.md).
 */
import type { ClickHouseClient } from '@clickhouse/client';
import type { CampaignProgress } from '../processors/campaigns/expansion.ts';
import type { MysqlCampaignProgress } from '../sinks/mysql/campaign-progress.ts';

export interface CampaignAccounting {
  readonly suppressed: Readonly<Record<string, number>>;
  readonly submitted: number;
  readonly arrived: number;
}

export interface CampaignReport {
  readonly campaign_id: string;
  readonly state: CampaignProgress['state'];
  readonly total: number;
  readonly expanded: number;
  readonly cancelled_at: string | null;
  /** Null while ClickHouse has no campaign column (`accounting_note` says why). */
  readonly suppressed: Readonly<Record<string, number>> | null;
  readonly submitted: number | null;
  readonly arrived: number | null;
  readonly accounting_note?: string;
}

/** Outcome kinds that end a push without a submission, counted by reason. */
const NOT_SENT = "kind IN ('suppressed', 'dropped', 'skipped_duplicate', 'merged')";
/** A submission attempt, as the arrival views count one (sinks/clickhouse/arrival-query.ts). */
const SUBMISSION = "source = 'outcome' AND kind IN ('submitted', 'accepted', 'failed', 'dead_token', 'throttled') AND reason != 'vendor_unreachable'";

export class CampaignProgressReader {
  private hasCampaignColumn?: boolean;

  constructor(
    private readonly progress: Pick<MysqlCampaignProgress, 'read'>,
    private readonly clickhouse: ClickHouseClient,
  ) {}

  /** The campaign's report, or undefined when it is not `sender`'s or the expansion has not seen it yet. */
  async report(campaignId: string, sender: string): Promise<CampaignReport | undefined> {
    const p = await this.progress.read(campaignId);
    if (!p || p.sender !== sender) return undefined;
    const base = {
      campaign_id: campaignId,
      state: p.state,
      total: p.total,
      expanded: p.expanded,
      cancelled_at: p.cancelledAt === null ? null : new Date(p.cancelledAt).toISOString(),
    };
    const accounting = await this.accounting(campaignId);
    if (!accounting) {
      return { ...base, suppressed: null, submitted: null, arrived: null, accounting_note: 'ClickHouse push_events has no campaign_id column yet' };
    }
    return { ...base, ...accounting };
  }

  /** The campaign's figures in ClickHouse; undefined when push_events has no campaign_id column. */
  async accounting(campaignId: string): Promise<CampaignAccounting | undefined> {
    if (!/^[A-Za-z0-9._:-]{1,64}$/.test(campaignId)) throw new RangeError('campaignId must be 1–64 of [A-Za-z0-9._:-]');
    if (this.hasCampaignColumn !== true) {
      const rows = await this.rows<{ n: string }>(
        "SELECT count() AS n FROM system.columns WHERE database = currentDatabase() AND table = 'push_events' AND name = 'campaign_id'",
      );
      this.hasCampaignColumn = Number(rows[0]?.n ?? 0) > 0;
      if (!this.hasCampaignColumn) return undefined;
    }
    const campaign = `campaign_id = '${campaignId}'`;
    const suppressed = await this.rows<{ reason: string; users: string }>(
      `SELECT reason, uniqExact(uid) AS users FROM push_events WHERE ${campaign} AND ${NOT_SENT} GROUP BY reason ORDER BY reason`,
    );
    // Receipts may not carry the campaign: pairs are the campaign's submitted (task, device) pairs,
    // and a pair arrived when any row of it (outcome or receipt) says accepted or delivered.
    const [pairs] = await this.rows<{ submitted: string; arrived: string }>(`
      SELECT count() AS submitted, sum(pair_arrived) AS arrived FROM (
        SELECT task_id, device_id, max(kind IN ('accepted', 'delivered')) AS pair_arrived
        FROM push_events
        WHERE task_id IN (SELECT task_id FROM push_events WHERE ${campaign} AND ${SUBMISSION}) AND task_id != ''
        GROUP BY task_id, device_id
        HAVING max(${SUBMISSION}) = 1
      )`);
    return {
      suppressed: Object.fromEntries(suppressed.map((r) => [r.reason, Number(r.users)])),
      submitted: Number(pairs?.submitted ?? 0),
      arrived: Number(pairs?.arrived ?? 0),
    };
  }

  private async rows<T>(query: string): Promise<T[]> {
    const result = await this.clickhouse.query({ query, format: 'JSONEachRow' });
    return result.json<T>();
  }
}
