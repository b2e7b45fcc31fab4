import type { Pool, RowDataPacket } from 'mysql2/promise';
import type { CampaignProgress, CampaignProgressSink, CampaignState } from '../../processors/campaigns/expansion.ts';
import { withMysqlRetry, type MysqlRetryOptions } from './errors.ts';

/**
 * The campaign expansion's progress in MySQL (migrations/mysql/009_push_campaign.sql): one row per
 * campaign, absolute counts, so that a write repeated after a crash (before the commit it preceded)
 * converges on what the resumed expansion writes. `expanded` never goes down: a late write of an
 * older snapshot cannot undo a newer one.
 */
export class MysqlCampaignProgress implements CampaignProgressSink {
  constructor(
    private readonly pool: Pool,
    private readonly retry: MysqlRetryOptions = {},
  ) {}

  async write(progress: readonly CampaignProgress[]): Promise<void> {
    if (progress.length === 0) return;
    const rows = progress.map((p) => [
      p.campaignId,
      p.sender,
      p.appId,
      p.state,
      p.total,
      p.expanded,
      p.cancelledAt === null ? null : new Date(p.cancelledAt),
      new Date(p.updatedAt),
    ]);
    await withMysqlRetry('campaign-progress', 'push_campaign', this.retry, () =>
      this.pool.query(
        `INSERT INTO push_campaign (campaign_id, sender, app_id, state, total, expanded, cancelled_at, updated_at) VALUES ?
         ON DUPLICATE KEY UPDATE
           state = IF(state = 'cancelled', state, VALUES(state)), total = VALUES(total), expanded = GREATEST(expanded, VALUES(expanded)),
           cancelled_at = COALESCE(cancelled_at, VALUES(cancelled_at)), updated_at = VALUES(updated_at)`,
        [rows],
      ),
    );
  }

  /** One campaign's row, or undefined when the expansion has not seen it (yet). */
  async read(campaignId: string): Promise<CampaignProgress | undefined> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      'SELECT campaign_id, sender, app_id, state, total, expanded, cancelled_at, updated_at FROM push_campaign WHERE campaign_id = ?',
      [campaignId],
    );
    const r = rows[0];
    if (!r) return undefined;
    return {
      campaignId: r.campaign_id as string,
      sender: r.sender as string,
      appId: r.app_id as string,
      state: r.state as CampaignState,
      total: Number(r.total),
      expanded: Number(r.expanded),
      cancelledAt: r.cancelled_at ? (r.cancelled_at as Date).getTime() : null,
      updatedAt: (r.updated_at as Date).getTime(),
    };
  }
}
