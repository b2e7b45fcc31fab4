import { readFileSync } from 'node:fs';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { PushError, errorMessage } from '../common/errors.ts';
import type { Endpoints } from '../common/endpoints.ts';
import { registryAvroSerde } from '../topology/registry-serde.ts';
import type { Serde } from '../topology/serdes.ts';
import type { ReceiptRaw } from '../processors/model/records.ts';

/** A verified callback as it goes to push.receipts.raw (processors/model/records.ts). */
export type ReceiptRawRecord = Readonly<ReceiptRaw>;

/** A verified callback and its key (processors/model/receipt-route.ts `receiptRawKey`). */
export interface KeyedReceiptRaw {
  readonly key: string;
  readonly record: ReceiptRawRecord;
}

/** Where verified callbacks go. `publish` resolves once Kafka acknowledged every record. */
export interface ReceiptPublisher {
  publish(records: readonly KeyedReceiptRaw[]): Promise<void>;
  close(): Promise<void>;
}

export interface KafkaReceiptPublisherOptions {
  readonly endpoints: Endpoints;
  /** The raw receipts topic (push.receipts.raw with the deployment's prefix; the wiring names it). */
  readonly topic: string;
  /** kafkajs client id. Default `push-receipts`. */
  readonly clientId?: string;
}

const RECEIPT_RAW_SCHEMA = JSON.parse(readFileSync(new URL('../schemas/receipt-raw.avsc', import.meta.url), 'utf8')) as object;

/**
 * Produces verified callbacks to push.receipts.raw with an idempotent producer (acks = all),
 * Avro through the schema registry, with the key the receiver gives (the recipient or the vendor, as
 * the schema documents) and kafkajs' default partitioner, the one the stages produce with.
 */
export class KafkaReceiptPublisher implements ReceiptPublisher {
  readonly topic: string;
  private readonly producer: Producer;
  private readonly serde: Serde<ReceiptRawRecord>;
  private connected?: Promise<void>;

  constructor(options: KafkaReceiptPublisherOptions) {
    this.topic = options.topic;
    const kafka = new Kafka({ clientId: options.clientId ?? 'push-receipts', brokers: options.endpoints.kafkaBrokers, logLevel: logLevel.NOTHING });
    this.producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
    this.serde = registryAvroSerde<ReceiptRawRecord>({
      registry: new SchemaRegistry({ host: options.endpoints.schemaRegistryUrl }),
      schema: RECEIPT_RAW_SCHEMA,
    });
  }

  async publish(records: readonly KeyedReceiptRaw[]): Promise<void> {
    if (records.length === 0) return;
    try {
      this.connected ??= this.producer.connect().catch((error: unknown) => {
        this.connected = undefined;
        throw error;
      });
      await this.connected;
      const messages = await Promise.all(
        records.map(async ({ key, record }) => ({ key, value: await this.serde.serialize(this.topic, record), timestamp: String(record.received_at) })),
      );
      await this.producer.send({ topic: this.topic, acks: -1, messages });
    } catch (error) {
      if (error instanceof PushError) throw error;
      throw new PushError('RECEIPT_PUBLISH_FAILED', `could not produce to ${this.topic}: ${errorMessage(error)}`, { retriable: true, cause: error });
    }
  }

  async close(): Promise<void> {
    if (this.connected) await this.producer.disconnect();
  }
}
