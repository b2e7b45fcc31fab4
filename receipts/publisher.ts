import { readFileSync } from 'node:fs';
import type { Message, Producer } from 'kafkajs';
import { kafkaClient } from '../common/kafka-client.ts';
import { schemaRegistryClient } from '../common/registry-client.ts';
import { PushError, errorMessage } from '../common/errors.ts';
import type { Endpoints } from '../common/endpoints.ts';
import { registryAvroSerde } from '../topology/registry-serde.ts';
import type { Serde } from '../topology/serdes.ts';
import type { ReceiptRaw } from '../processors/model/records.ts';
import { KeyPartitioner } from '../topology/partitioner.ts';

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
  /** Called with the API name of each request the producer sends (the worker counts them per message). */
  readonly onRequest?: (api: string) => void;
}

const RECEIPT_RAW_SCHEMA = JSON.parse(readFileSync(new URL('../schemas/receipt-raw.avsc', import.meta.url), 'utf8')) as object;

/**
 * Encoded value bytes one produce request carries at most: well under the topic's 1 MB record
 * batch limit, so callbacks coalesced into one request cannot make it too large for the broker
 * (one callback alone is bounded by the receiver's body limit and always goes).
 */
const MAX_BATCH_BYTES = 256 * 1024;

interface Waiting {
  readonly messages: Message[];
  readonly bytes: number;
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * Produces verified callbacks to push.receipts.raw with an idempotent producer (acks = all),
 * Avro through the schema registry, with the key the receiver gives (the recipient or the vendor, as
 * the schema documents) and kafkajs' default partitioner, the one the stages produce with.
 *
 * One produce request is in flight at a time; callbacks verified meanwhile wait and go together in
 * the next one (group commit), so a busy receiver sends a request per broker round trip rather
 * than one per callback, and an idle one still sends each callback at once. Every callback of a
 * request resolves or fails with it: a failed request answers all of them 503, and the vendors'
 * retries of those written anyway are duplicates the receipt stages already drop.
 */
export class KafkaReceiptPublisher implements ReceiptPublisher {
  readonly topic: string;
  private readonly producer: Producer;
  private readonly serde: Serde<ReceiptRawRecord>;
  private connected?: Promise<void>;
  private readonly waiting: Waiting[] = [];
  private sending = false;

  constructor(options: KafkaReceiptPublisherOptions) {
    this.topic = options.topic;
    const kafka = kafkaClient(options.endpoints, { clientId: options.clientId ?? 'push-receipts' });
    this.producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false, createPartitioner: KeyPartitioner });
    const onRequest = options.onRequest;
    if (onRequest) this.producer.on(this.producer.events.REQUEST, ({ payload }) => onRequest(payload.apiName));
    this.serde = registryAvroSerde<ReceiptRawRecord>({
      registry: schemaRegistryClient(options.endpoints),
      schema: RECEIPT_RAW_SCHEMA,
    });
  }

  async publish(records: readonly KeyedReceiptRaw[]): Promise<void> {
    if (records.length === 0) return;
    let messages: Message[];
    try {
      messages = await Promise.all(
        records.map(async ({ key, record }) => ({ key, value: await this.serde.serialize(this.topic, record), timestamp: String(record.received_at) })),
      );
    } catch (error) {
      throw this.failure(error);
    }
    const bytes = messages.reduce((n, m) => n + (m.value as Buffer).length, 0);
    await new Promise<void>((resolve, reject) => {
      this.waiting.push({ messages, bytes, resolve, reject });
      this.sendWaiting();
    });
  }

  async close(): Promise<void> {
    if (this.connected) await this.producer.disconnect();
  }

  /** Sends what waits, up to MAX_BATCH_BYTES, unless a request is in flight (its end calls this again). */
  private sendWaiting(): void {
    if (this.sending || this.waiting.length === 0) return;
    let bytes = this.waiting[0]!.bytes;
    let n = 1;
    while (n < this.waiting.length && bytes + this.waiting[n]!.bytes <= MAX_BATCH_BYTES) bytes += this.waiting[n++]!.bytes;
    const batch = this.waiting.splice(0, n);
    this.sending = true;
    this.send(batch.flatMap((w) => w.messages)).then(
      () => this.settle(batch, (w) => w.resolve()),
      (error: unknown) => this.settle(batch, (w) => w.reject(this.failure(error))),
    );
  }

  private settle(batch: readonly Waiting[], each: (w: Waiting) => void): void {
    this.sending = false;
    for (const w of batch) each(w);
    this.sendWaiting();
  }

  private async send(messages: Message[]): Promise<void> {
    this.connected ??= this.producer.connect().catch((error: unknown) => {
      this.connected = undefined;
      throw error;
    });
    await this.connected;
    await this.producer.send({ topic: this.topic, acks: -1, messages });
  }

  private failure(error: unknown): PushError {
    if (error instanceof PushError) return error;
    return new PushError('RECEIPT_PUBLISH_FAILED', `could not produce to ${this.topic}: ${errorMessage(error)}`, { retriable: true, cause: error });
  }
}
