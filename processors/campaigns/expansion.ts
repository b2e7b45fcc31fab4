/**
 * The campaign expansion (docs/entry.md): a push.campaigns CREATE becomes one push.requests record per
 * distinct uid, a CANCEL stops what is not expanded yet and is announced on push.campaign-control
 * (read by the stages after the expansion through processors/campaigns/cancellations.ts).
 *
 * Resumable and exactly once through the runtime's exactly-once tasks: a CREATE's uids go into the
 * changelogged `campaign-uids` store in chunks, and a wall-clock punctuator expands them at the
 * configured rate, advancing the campaign's cursor (chunk, position) in `campaign-meta` and
 * deleting each finished chunk in the same step in which it forwards the requests. Requests, chunk deletions, cursor and input offsets are
 * committed in one Kafka transaction, so a worker killed in the middle of a campaign resumes, after
 * the restore, exactly at the first chunk whose requests were not committed: no uid is expanded
 * twice or skipped (test/processors/campaigns/expansion-crash.stack.test.ts).
 */
import { ContractError } from '../../common/errors.ts';
import type { ChildNames, Processor, ProcessorContext, StreamRecord } from '../../topology/api.ts';
import type { KeyValueStore } from '../../topology/stores.ts';
import { MAX_LENGTH, id } from '../model/ingest.ts';
import { MAX_CAMPAIGN_ID, campaignRequestKey, contentOf, type PushCampaignRecord, type PushContent, type PushRequestRecord } from './records.ts';
import { FULL_PACE, type ExpansionPace } from './pace.ts';

export type CampaignState = 'expanding' | 'done' | 'cancelled';

/** A campaign as the expansion keeps it (store `campaign-meta`, key campaign_id). */
export interface CampaignMeta {
  readonly content: PushContent;
  readonly requestedAt: number;
  /** Distinct uids of the campaign (0 for a campaign cancelled before it was created). */
  readonly total: number;
  /** Requests produced so far. */
  expanded: number;
  /** Chunks in `campaign-uids`; `next` is the first not yet expanded, `pos` the first uid of it not expanded (absent: 0). */
  readonly chunks: number;
  next: number;
  pos?: number;
  state: CampaignState;
  cancelledAt: number | null;
}

/** What the expansion reports of a campaign (pushctl entry's GET /v1/campaigns/{id} reads it). */
export interface CampaignProgress {
  readonly campaignId: string;
  readonly sender: string;
  readonly appId: string;
  readonly state: CampaignState;
  readonly total: number;
  readonly expanded: number;
  readonly cancelledAt: number | null;
  readonly updatedAt: number;
}

/**
 * Where progress goes (a port: the MySQL table push_campaign, sinks/mysql/campaign-progress.ts).
 * Written before each commit with absolute counts, so a write repeated after a crash converges.
 */
export interface CampaignProgressSink {
  write(progress: readonly CampaignProgress[]): Promise<void>;
}

/** What the expansion reports as it goes (the worker's metrics: push_campaigns_expanding, push_campaign_uids_expanded_total). */
export interface ExpansionListener {
  /** The campaigns a task holds as expanding: at init, after each tick, and 0 when the task closes. */
  expanding?(taskId: string, campaigns: number): void;
  /** Uids turned into requests by one tick. */
  expanded?(uids: number): void;
}

/** Reads a campaign's uid file (a port: the wiring reads local files). One uid per line. */
export type UidFileReader = (path: string) => Promise<readonly string[]>;

export interface ExpansionConfig {
  readonly stores: { readonly meta: string; readonly uids: string };
  readonly outputs: { readonly requests: ChildNames; readonly control: ChildNames };
  /** Uids per stored chunk (a changelog record). */
  readonly chunkSize: number;
  /** Requests produced per second and task at most (PUSH_CAMPAIGN_EXPANSION_RATE). */
  readonly ratePerSecond: number;
  /** The share of `ratePerSecond` to expand at now (pace.ts); default the full rate. */
  readonly pace?: ExpansionPace;
  /** Punctuator interval, ms. */
  readonly tickMs: number;
  /** Distinct uids per campaign at most (PUSH_CAMPAIGN_MAX_UIDS). */
  readonly maxUids: number;
  readonly readUidFile?: UidFileReader;
  readonly progress?: CampaignProgressSink;
  readonly listener?: ExpansionListener;
}

type Output = PushRequestRecord | PushCampaignRecord;

export class CampaignExpansion implements Processor<string, PushCampaignRecord, string, Output> {
  private ctx!: ProcessorContext<string, Output>;
  private meta!: KeyValueStore<CampaignMeta>;
  private uids!: KeyValueStore<readonly string[]>;
  /** Campaigns still expanding, oldest first (rebuilt from `campaign-meta` at init). */
  private readonly active = new Set<string>();
  private readonly dirty = new Set<string>();
  /** Requests the pace allowed and not produced yet (fractions carried between ticks, at most one tick's worth). */
  private allowance = 0;

  constructor(private readonly config: ExpansionConfig) {}

  init(ctx: ProcessorContext<string, Output>): void {
    this.ctx = ctx;
    this.meta = ctx.getStateStore(this.config.stores.meta);
    this.uids = ctx.getStateStore(this.config.stores.uids);
    const expanding = [...this.meta.entries()].filter(([, m]) => m.state === 'expanding').sort((a, b) => a[1].requestedAt - b[1].requestedAt);
    for (const [campaignId] of expanding) this.active.add(campaignId);
    this.config.listener?.expanding?.(ctx.taskId, this.active.size);
    ctx.schedule(this.config.tickMs, 'wall-clock', () => {
      this.expand();
      this.config.listener?.expanding?.(ctx.taskId, this.active.size);
    });
  }

  close(): void {
    this.config.listener?.expanding?.(this.ctx.taskId, 0);
  }

  async process(record: StreamRecord<string, PushCampaignRecord>): Promise<void> {
    const c = record.value;
    if (record.key !== c.campaign_id) throw new ContractError('CAMPAIGN_INVALID', 'campaign_id: must equal the record key');
    const broken = id('campaign_id', c.campaign_id, MAX_CAMPAIGN_ID) ?? id('sender', c.sender, MAX_LENGTH.appId);
    if (broken) throw new ContractError('CAMPAIGN_INVALID', broken);
    const known = this.meta.get(c.campaign_id);
    if (known && known.content.sender !== c.sender)
      throw new ContractError('CAMPAIGN_SENDER_MISMATCH', `sender: campaign ${c.campaign_id} belongs to another sender`);
    if (c.action === 'CANCEL') return this.cancel(c, known);
    if (known) return; // a repeated CREATE (a retried request) or one cancelled before it arrived
    const uids = await this.recipients(c);
    const chunks = Math.ceil(uids.length / this.config.chunkSize);
    for (let i = 0; i < chunks; i++) this.uids.put(chunkKey(c.campaign_id, i), uids.slice(i * this.config.chunkSize, (i + 1) * this.config.chunkSize));
    this.meta.put(c.campaign_id, {
      content: contentOf(c),
      requestedAt: c.requested_at,
      total: uids.length,
      expanded: 0,
      chunks,
      next: 0,
      state: chunks === 0 ? 'done' : 'expanding',
      cancelledAt: null,
    });
    if (chunks > 0) this.active.add(c.campaign_id);
    this.dirty.add(c.campaign_id);
  }

  async flush(): Promise<void> {
    if (this.dirty.size === 0 || !this.config.progress) return this.dirty.clear();
    const now = this.ctx.wallClockTimeMs();
    const progress = [...this.dirty].flatMap((campaignId) => {
      const m = this.meta.get(campaignId);
      if (!m) return [];
      const { sender, app_id: appId } = m.content;
      return [{ campaignId, sender, appId, state: m.state, total: m.total, expanded: m.expanded, cancelledAt: m.cancelledAt, updatedAt: now }];
    });
    await this.config.progress.write(progress);
    this.dirty.clear();
  }

  /** Expands up to the paced rate's share of one tick, oldest campaign first; a chunk is deleted once all of it is expanded. */
  private expand(): void {
    if (this.active.size === 0) return void (this.allowance = 0);
    const pace = this.config.pace ?? FULL_PACE;
    pace.expanding?.();
    const tickBudget = (this.config.ratePerSecond * this.config.tickMs) / 1000;
    this.allowance = Math.min(Math.max(1, tickBudget), this.allowance + tickBudget * pace.share());
    let budget = Math.floor(this.allowance);
    if (budget === 0) return;
    this.allowance -= budget;
    const now = this.ctx.wallClockTimeMs();
    for (const campaignId of this.active) {
      const m = this.meta.get(campaignId);
      if (!m || m.state !== 'expanding') {
        this.active.delete(campaignId);
        continue;
      }
      while (budget > 0 && m.next < m.chunks) {
        const key = chunkKey(campaignId, m.next);
        const uids = this.uids.get(key) ?? [];
        const from = m.pos ?? 0;
        const to = Math.min(uids.length, from + budget);
        for (let i = from; i < to; i++)
          this.ctx.forward({ key: uids[i]!, value: this.request(campaignId, m, uids[i]!), timestamp: now }, this.config.outputs.requests);
        m.expanded += to - from;
        this.config.listener?.expanded?.(to - from);
        budget -= Math.max(1, to - from);
        if (to < uids.length) {
          m.pos = to;
          continue;
        }
        this.uids.delete(key);
        m.next++;
        m.pos = 0;
      }
      if (m.next >= m.chunks) {
        m.state = 'done';
        this.active.delete(campaignId);
      }
      this.meta.put(campaignId, m);
      this.dirty.add(campaignId);
      if (budget <= 0) return;
    }
  }

  private request(campaignId: string, m: CampaignMeta, uid: string): PushRequestRecord {
    return {
      ...m.content,
      uid,
      idempotency_key: campaignRequestKey(campaignId, uid),
      device_id: null,
      campaign_id: campaignId,
      requested_at: m.requestedAt,
    };
  }

  private cancel(c: PushCampaignRecord, known: CampaignMeta | undefined): void {
    if (known?.state === 'cancelled') return;
    const now = this.ctx.wallClockTimeMs();
    const m: CampaignMeta = known ?? {
      content: contentOf(c),
      requestedAt: c.requested_at,
      total: 0,
      expanded: 0,
      chunks: 0,
      next: 0,
      state: 'cancelled',
      cancelledAt: null,
    };
    for (let i = m.next; i < m.chunks; i++) this.uids.delete(chunkKey(c.campaign_id, i));
    m.next = m.chunks;
    m.state = 'cancelled';
    m.cancelledAt = now;
    this.meta.put(c.campaign_id, m);
    this.active.delete(c.campaign_id);
    this.dirty.add(c.campaign_id);
    // The control topic is compacted by campaign id: the CANCEL as accepted, without its uid list.
    this.ctx.forward({ key: c.campaign_id, value: { ...c, uids: [], uid_file: null }, timestamp: now }, this.config.outputs.control);
  }

  /** The campaign's distinct uids, in the order given; a campaign breaking a rule goes to the DLQ naming the field. */
  private async recipients(c: PushCampaignRecord): Promise<string[]> {
    if (c.uids.length > 0 && c.uid_file !== null) throw new ContractError('CAMPAIGN_INVALID', 'uids: give either uids or uid_file, not both');
    let listed: readonly string[] = c.uids;
    if (c.uid_file !== null) {
      if (!this.config.readUidFile) throw new ContractError('CAMPAIGN_INVALID', 'uid_file: this deployment reads no uid files');
      try {
        listed = await this.config.readUidFile(c.uid_file);
      } catch (error) {
        throw new ContractError('CAMPAIGN_UID_FILE', `uid_file: cannot be read (${(error as Error).message})`, error);
      }
    }
    const distinct = new Set<string>();
    listed.forEach((uid, i) => {
      const broken = id(`uids[${i}]`, uid, MAX_LENGTH.uid);
      if (broken) throw new ContractError('CAMPAIGN_INVALID', broken);
      distinct.add(uid);
    });
    if (distinct.size > this.config.maxUids)
      throw new ContractError('CAMPAIGN_TOO_LARGE', `uids: ${distinct.size} distinct uids (max ${this.config.maxUids}, PUSH_CAMPAIGN_MAX_UIDS)`);
    return [...distinct];
  }
}

function chunkKey(campaignId: string, chunk: number): string {
  return `${campaignId}|${chunk}`;
}
