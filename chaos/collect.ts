/**
 * Reading what the pipeline wrote, as a user of its topics would: push.outcomes (Avro through the
 * registry) and push.dlq (original bytes plus reason headers), read_committed, from the beginning,
 * kept in memory for the verdict. Also the raw producer for malformed inputs.
 */
import type { Consumer } from 'kafkajs';
import { kafkaClient } from '../common/kafka-client.ts';
import { schemaRegistryClient } from '../common/registry-client.ts';
import { readEndpoints } from '../common/endpoints.ts';
import { errorMessage } from '../common/errors.ts';
import { registryValueSerdes } from '../pipeline/serdes.ts';
import { topicName } from '../pipeline/topics.ts';
import { DLQ_HEADERS } from '../topology/dlq.ts';
import type { PushOutcome } from '../processors/model/records.ts';

export interface DeadLetterSeen {
  readonly sourceTopic: string;
  /** `topic/partition/offset` of the input that failed. */
  readonly source: string;
  readonly code: string;
  readonly phase: string;
}

export interface Collector<T> {
  readonly records: T[];
  /** ms since the last record arrived (or since start). */
  quietForMs(): number;
  close(): Promise<void>;
}

const kafka = () => kafkaClient(readEndpoints(), { clientId: 'chaos-reader', retry: { retries: 50, maxRetryTime: 5000 } });

async function collect<T>(
  topic: string,
  groupId: string,
  decode: (value: Buffer, headers: Record<string, string>) => Promise<T | undefined>,
): Promise<Collector<T>> {
  const records: T[] = [];
  let last = Date.now();
  const consumer: Consumer = kafka().consumer({ groupId, readUncommitted: false, sessionTimeout: 10_000, heartbeatInterval: 1000 });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      last = Date.now();
      if (!message.value) return;
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(message.headers ?? {})) if (v !== undefined) headers[k] = Array.isArray(v) ? String(v[0]) : String(v);
      // A record left out shows in the verdict as a missing outcome: say why it was left out.
      const value = await decode(message.value, headers).catch((error: unknown) => {
        console.error(`[chaos] ${topic}/${partition}/${message.offset} left out of the verdict: not decodable (${errorMessage(error)})`);
        return undefined;
      });
      if (value !== undefined) records.push(value);
    },
  });
  return { records, quietForMs: () => Date.now() - last, close: () => consumer.disconnect() };
}

/** Every push-outcome record of the run, decoded. */
export async function collectOutcomes(topicPrefix: string, groupId: string): Promise<Collector<PushOutcome>> {
  const serde = registryValueSerdes(schemaRegistryClient(readEndpoints()), topicPrefix)('outcomes');
  return collect(topicName('outcomes', topicPrefix), groupId, async (value) => (await serde.deserialize('', value)) as PushOutcome);
}

/** Every dead letter of the run, by its reason headers. */
export async function collectDeadLetters(topicPrefix: string, groupId: string): Promise<Collector<DeadLetterSeen>> {
  return collect(topicName('dlq', topicPrefix), groupId, async (_value, h) => ({
    sourceTopic: h[DLQ_HEADERS.sourceTopic] ?? '',
    source: `${h[DLQ_HEADERS.sourceTopic]}/${h[DLQ_HEADERS.sourcePartition]}/${h[DLQ_HEADERS.sourceOffset]}`,
    code: h[DLQ_HEADERS.errorCode] ?? '',
    phase: h[DLQ_HEADERS.phase] ?? '',
  }));
}
