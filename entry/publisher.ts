import type { Producer } from 'kafkajs';
import { kafkaClient } from '../common/kafka-client.ts';
import { schemaRegistryClient } from '../common/registry-client.ts';
import type { Endpoints } from '../common/endpoints.ts';
import { PushError, errorMessage } from '../common/errors.ts';
import { registryValueSerdes, type ValueSerdes } from '../pipeline/serdes.ts';
import { topicName } from '../pipeline/topics.ts';
import type { PushCampaignRecord, PushRequestRecord } from '../processors/campaigns/records.ts';
import { KeyPartitioner } from '../topology/partitioner.ts';

/** Where the entry's accepted requests go. Each call resolves once Kafka acknowledged the record. */
export interface EntryPublisher {
  request(record: PushRequestRecord): Promise<void>;
  campaign(record: PushCampaignRecord): Promise<void>;
  close(): Promise<void>;
}

/**
 * Produces to push.requests (key uid) and push.campaigns (key campaign_id) with an idempotent
 * producer (acks = all), Avro through the schema registry (pipeline/serdes.ts). The entry produces
 * nothing else: validation, strategies and vendors are the pipeline's.
 */
export class KafkaEntryPublisher implements EntryPublisher {
  private readonly producer: Producer;
  private readonly serdes: ValueSerdes;
  private connected?: Promise<void>;

  constructor(
    endpoints: Endpoints,
    private readonly topicPrefix = '',
  ) {
    const kafka = kafkaClient(endpoints, { clientId: 'push-entry' });
    this.producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false, createPartitioner: KeyPartitioner });
    this.serdes = registryValueSerdes(schemaRegistryClient(endpoints), topicPrefix);
  }

  request(record: PushRequestRecord): Promise<void> {
    return this.send('requests', record.uid, record, record.requested_at);
  }

  campaign(record: PushCampaignRecord): Promise<void> {
    return this.send('campaigns', record.campaign_id, record, record.requested_at);
  }

  async close(): Promise<void> {
    if (this.connected) await this.producer.disconnect();
  }

  /** One connection attempt at a time; a failed one is forgotten, so the next request tries again. */
  private connect(): Promise<void> {
    if (!this.connected) {
      const attempt = this.producer.connect();
      this.connected = attempt;
      attempt.catch(() => {
        if (this.connected === attempt) this.connected = undefined;
      });
    }
    return this.connected;
  }

  private async send(key: 'requests' | 'campaigns', recordKey: string, value: unknown, at: number): Promise<void> {
    const topic = topicName(key, this.topicPrefix);
    try {
      await this.connect();
      const encoded = await this.serdes(key).serialize(topic, value);
      await this.producer.send({ topic, acks: -1, messages: [{ key: recordKey, value: encoded, timestamp: String(at) }] });
    } catch (error) {
      if (error instanceof PushError) throw error;
      throw new PushError('ENTRY_PUBLISH_FAILED', `could not produce to ${topic}: ${errorMessage(error)}`, { retriable: true, cause: error });
    }
  }
}
