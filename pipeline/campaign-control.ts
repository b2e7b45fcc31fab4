/**
 * The cancelled campaigns, read whole from the compacted push.campaign-control topic (the CANCELs
 * the campaign expansion accepted, pipeline/apps/campaigns.ts) into memory: the port
 * `CampaignCancellations` (processors/campaigns/cancellations.ts) of the stages after the
 * expansion. Every worker reads every partition, without a committed position (a consumer group of
 * its own that never commits), and `start` resolves once what the topic held at start is read, so
 * a restarted stage knows every earlier cancellation before it processes a request. A new CANCEL
 * is seen within about a second of the expansion's commit.
 */
import { randomUUID } from 'node:crypto';
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import type { Consumer } from 'kafkajs';
import { kafkaClient } from '../common/kafka-client.ts';
import type { Endpoints } from '../common/endpoints.ts';
import type { Logger } from '../common/log.ts';
import type { CampaignCancellations } from '../processors/campaigns/cancellations.ts';
import type { PushCampaignRecord } from '../processors/campaigns/records.ts';
import { registryValueSerdes } from './serdes.ts';
import { topicName } from './topics.ts';

export interface CampaignControlOptions {
  readonly endpoints: Endpoints;
  readonly registry: SchemaRegistry;
  readonly topicPrefix?: string;
  readonly logger?: Logger;
}

export class KafkaCampaignCancellations implements CampaignCancellations {
  private readonly cancelled = new Map<string, number>();
  private readonly consumer: Consumer;
  private readonly topic: string;

  constructor(private readonly options: CampaignControlOptions) {
    this.topic = topicName('campaignControl', options.topicPrefix);
    const kafka = kafkaClient(options.endpoints, { clientId: 'push-campaign-control' });
    // A record ends a fetch at once (kafkajs' minBytes 1), so a cancellation is read as soon as it is
    // committed; the wait bounds only an empty poll, and a longer one wakes an idle process less.
    this.consumer = kafka.consumer({ groupId: `push-campaign-control-${randomUUID()}`, maxWaitTimeInMs: 1000, readUncommitted: false });
  }

  cancelledAt(campaignId: string): number | undefined {
    return this.cancelled.get(campaignId);
  }

  /** Subscribes from the beginning; resolves once every record the topic held at the call is read. */
  async start(): Promise<void> {
    const admin = kafkaClient(this.options.endpoints, { clientId: 'push-campaign-control' }).admin();
    await admin.connect();
    // The high watermark under read_committed reading: records before it are read or aborted.
    const ends = await admin.fetchTopicOffsets(this.topic).finally(() => admin.disconnect());
    const pending = new Map(ends.filter((p) => Number(p.high) > Number(p.low)).map((p) => [p.partition, Number(p.high)]));
    let caughtUp!: () => void;
    const ready = new Promise<void>((resolve) => (caughtUp = resolve));
    if (pending.size === 0) caughtUp();
    const serde = registryValueSerdes(this.options.registry, this.options.topicPrefix)('campaignControl');
    // Batches of transaction markers or aborted records only reach this event, not eachBatch.
    this.consumer.on(this.consumer.events.END_BATCH_PROCESS, ({ payload }) => {
      const end = pending.get(payload.partition);
      if (end === undefined || Number(payload.lastOffset) + 1 < end) return;
      pending.delete(payload.partition);
      if (pending.size === 0) caughtUp();
    });
    await this.consumer.connect();
    await this.consumer.subscribe({ topics: [this.topic], fromBeginning: true });
    await this.consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        for (const message of batch.messages) {
          if (message.value === null) continue;
          try {
            const c = (await serde.deserialize(this.topic, message.value)) as PushCampaignRecord;
            if (c.action === 'CANCEL') this.cancelled.set(c.campaign_id, c.requested_at);
          } catch (error) {
            this.options.logger?.warn('undecodable push.campaign-control record skipped', { offset: message.offset, error });
          }
        }
      },
    });
    await ready;
  }

  async close(): Promise<void> {
    await this.consumer.disconnect();
  }
}

/**
 * A stage's reader of push.campaign-control, started: the stages after the expansion (business,
 * fan-out-business) each take one. The stage may start before the topic is read to its end (a
 * failure to read is logged, not thrown); the lane's fan-out waits for `read` before sending
 * (FanOutOptions.cancellationsRead). `close` stops reading once the start has settled.
 */
export function startCampaignCancellations(options: CampaignControlOptions): {
  readonly cancellations: KafkaCampaignCancellations;
  /** Settles once the topic is read to where it ended at the start, or the read failed (logged). */
  readonly read: Promise<void>;
  close(): Promise<void>;
} {
  const cancellations = new KafkaCampaignCancellations(options);
  const read = cancellations.start().catch((error: unknown) => options.logger?.error('push.campaign-control could not be read', { error }));
  return { cancellations, read, close: () => read.then(() => cancellations.close()) };
}
