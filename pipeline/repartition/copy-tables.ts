/**
 * Step 3 of a repartition, the tables: the compacted topics (push.tokens, push.settings,
 * push.campaign-control) of the old generation are the source of truth the stores were built from,
 * and the new generation's topics must hold them too (a later rebuild, the campaign cancellations
 * read whole by the business stage, and the last token invalidations the fan-out or the receipts
 * wrote after the decisions stopped). The latest record of every key is written to the new topic,
 * keyed as before so the producer's partitioner puts it in the key's new partition, unless the new
 * topic already has that key: a producer that switched at step 2 wrote a newer value there, which
 * must stay the latest. Values are copied as bytes (the registry's schema ids are global).
 *
 * The stages of the new generation read these records again on top of the state the copy of the
 * changelogs gave them; they apply them by their own time stamps (a token report by reported_at,
 * settings by updated_at), so an older report read again changes nothing.
 */
import { kafkaClient } from '../../common/kafka-client.ts';
import { readEndpoints, type Endpoints } from '../../common/endpoints.ts';
import { topicName } from '../topics.ts';
import { partitionCounts, repartitionAdmin, TABLE_TOPICS, type Generation } from './generation.ts';
import { readLatest } from './read-topic.ts';

export interface TableCopy {
  readonly from: string;
  readonly to: string;
  /** Keys in the old table. */
  readonly keys: number;
  /** Keys written to the new topic. */
  readonly written: number;
  /** Keys the new topic already had (left as they are). */
  readonly kept: number;
}

export async function copyTables(from: Generation, to: Generation, endpoints: Endpoints = readEndpoints()): Promise<TableCopy[]> {
  const kafka = kafkaClient(endpoints, { clientId: 'pushctl-repartition' });
  const admin = repartitionAdmin(endpoints);
  await admin.connect();
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
  await producer.connect();
  try {
    const copies: TableCopy[] = [];
    const tables = TABLE_TOPICS.map((k) => ({ source: topicName(k, from.prefix), target: topicName(k, to.prefix) }));
    const counts = await partitionCounts(
      admin,
      tables.flatMap((t) => [t.source, t.target]),
    );
    const present = tables.filter((t) => counts.has(t.source) && counts.has(t.target));
    const contents = await readLatest(
      kafka,
      admin,
      present.flatMap((t) => [t.source, t.target]),
      `${to.applicationId}-repartition`,
    );
    for (const { source, target } of present) {
      const there = new Set([...contents.get(target)!.values()].flatMap((m) => [...m.keys()]));
      const latest = new Map<string, Buffer>();
      for (const entries of contents.get(source)!.values()) for (const [key, value] of entries) latest.set(key, value);
      const messages = [...latest].filter(([key]) => !there.has(key)).map(([key, value]) => ({ key, value }));
      for (let i = 0; i < messages.length; i += 5000) await producer.send({ topic: target, messages: messages.slice(i, i + 5000), acks: -1 });
      copies.push({ from: source, to: target, keys: latest.size, written: messages.length, kept: latest.size - messages.length });
    }
    return copies;
  } finally {
    await producer.disconnect();
    await admin.disconnect();
  }
}
