/**
 * Producing the IM side's records (persisted messages, presence, token reports, settings) in
 * real time, Avro-encoded through the schema registry exactly as the IM logic would, and watching
 * the pipeline's outcomes come back.
 */
import type { Producer, Consumer } from 'kafkajs';
import { kafkaClient } from '../common/kafka-client.ts';
import { schemaRegistryClient } from '../common/registry-client.ts';
import { readEndpoints } from '../common/endpoints.ts';
import { registryValueSerdes, type ValueSerdes } from '../pipeline/serdes.ts';
import { registerSchemas } from '../pipeline/schemas.ts';
import { topicName, type TopicKey } from '../pipeline/topics.ts';
import type { TimedRecord } from './workload.ts';

export interface TrafficProducer {
  send(topic: TopicKey, records: ReadonlyArray<{ key: string; value: unknown }>): Promise<void>;
  /** Plays a timeline against the clock: each record is sent at its `at` (late ones at once). */
  play(timeline: Iterable<TimedRecord>, onProgress?: (sent: number) => void): Promise<number>;
  close(): Promise<void>;
}

export async function trafficProducer(topicPrefix: string): Promise<TrafficProducer> {
  const endpoints = readEndpoints();
  const registry = schemaRegistryClient(endpoints);
  await registerSchemas(registry, { prefix: topicPrefix });
  const serdes: ValueSerdes = registryValueSerdes(registry, topicPrefix);
  // Idempotent, as the IM backend's producer should be: a send retried across a broker's loss is
  // written once and in order, never twice or (after the retries) not at all.
  const producer: Producer = kafkaClient(endpoints, { clientId: 'im-traffic' }).producer({
    allowAutoTopicCreation: false,
    idempotent: true,
    maxInFlightRequests: 1,
  });
  await producer.connect();

  const send: TrafficProducer['send'] = async (topic, records) => {
    const name = topicName(topic, topicPrefix);
    const serde = serdes(topic);
    const messages = await Promise.all(records.map(async (r) => ({ key: r.key, value: await serde.serialize(name, r.value) })));
    for (let i = 0; i < messages.length; i += 2000) await producer.send({ topic: name, messages: messages.slice(i, i + 2000), acks: -1 });
  };

  return {
    send,
    async play(timeline, onProgress) {
      let sent = 0;
      let batch: Record<'persisted' | 'presence', Array<{ key: string; value: unknown }>> = { persisted: [], presence: [] };
      const flush = async () => {
        const current = batch;
        batch = { persisted: [], presence: [] };
        await Promise.all([send('persisted', current.persisted), send('presence', current.presence)]);
        onProgress?.(sent);
      };
      for (const record of timeline) {
        const wait = record.at - Date.now();
        if (wait > 5) {
          await flush();
          await new Promise((resolve) => setTimeout(resolve, wait));
        }
        batch[record.topic].push({ key: record.key, value: record.value });
        sent++;
        if (batch.persisted.length + batch.presence.length >= 2000) await flush();
      }
      await flush();
      return sent;
    },
    close: () => producer.disconnect(),
  };
}

/** Live counts of the pipeline's outcomes (read_committed), for progress and the summary. */
export interface OutcomeWatcher {
  readonly total: () => number;
  /** Counts by `status` or `status/reason` or `vendor/<vendor>`, and per app by `<app_id>|status` and `<app_id>|status/reason`. */
  readonly counts: Map<string, number>;
  /** persisted → vendor-accepted latencies of ACCEPTED outcomes, ms. */
  readonly acceptedLatencies: number[];
  /** ms since the last outcome arrived. */
  readonly quietForMs: () => number;
  close(): Promise<void>;
}

export async function watchOutcomes(topicPrefix: string, groupId: string): Promise<OutcomeWatcher> {
  const endpoints = readEndpoints();
  const registry = schemaRegistryClient(endpoints);
  const serde = registryValueSerdes(registry, topicPrefix)('outcomes');
  const consumer: Consumer = kafkaClient(endpoints, { clientId: 'outcome-watcher' }).consumer({ groupId });
  const counts = new Map<string, number>();
  const acceptedLatencies: number[] = [];
  let total = 0;
  let last = Date.now();
  const bump = (key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
  await consumer.connect();
  await consumer.subscribe({ topics: [topicName('outcomes', topicPrefix)], fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      if (!message.value) return;
      const o = (await serde.deserialize('', message.value)) as {
        status: string;
        reason: string | null;
        vendor: string | null;
        latency_ms: number | null;
        app_id: string;
      };
      total++;
      last = Date.now();
      bump(o.status);
      bump(`${o.app_id}|${o.status}`);
      if (o.reason) {
        bump(`${o.status}/${o.reason}`);
        bump(`${o.app_id}|${o.status}/${o.reason}`);
      }
      if (o.status === 'ACCEPTED' && o.vendor) {
        bump(`vendor/${o.vendor}`);
        if (o.latency_ms !== null) acceptedLatencies.push(Number(o.latency_ms));
      }
    },
  });
  return { total: () => total, counts, acceptedLatencies, quietForMs: () => Date.now() - last, close: () => consumer.disconnect() };
}
