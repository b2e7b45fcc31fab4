/**
 * Step 3 of a repartition, the state: every changelog of the old generation, read to its end
 * (latest value per key, tombstones applied), is written to the same store's changelog of the new
 * generation, each entry to the partition its owner belongs to under the new count (the placement
 * its stage's definition declares, store-keys.ts). Workers of the new generation restore their
 * stores from there before they process a record, so the open merge windows, holds, presence,
 * tokens, settings, parked retries, kept requests and ledgers go on where the old generation left
 * them; their timers move with them.
 *
 * One transaction per changelog: a copy that fails leaves nothing of that changelog behind, and a
 * copy run again writes the same latest value of every key again (a restore ends in the same
 * state). It must not run once the new generation's workers have started (they write there
 * themselves): `copyState` refuses then.
 */
import { Kafka, type Admin } from 'kafkajs';
import { kafkaClient } from '../../common/kafka-client.ts';
import { readEndpoints, type Endpoints } from '../../common/endpoints.ts';
import { ConfigError } from '../../common/errors.ts';
import { jsonStoreSerde } from '../../topology/stores.ts';
import { groupStatus } from '../group-status.ts';
import { generationGroups, partitionCounts, partitionOf, repartitionAdmin, stageChangelog, statefulStages, type Generation } from './generation.ts';
import { entryCount, readLatest, type TopicContent } from './read-topic.ts';
import type { Placement } from './store-keys.ts';

/** What the copy did with one store. */
export interface StoreCopy {
  readonly from: string;
  readonly to: string;
  /** Entries read (latest per key and old partition). */
  readonly read: number;
  /** Records written to the new changelog. */
  readonly written: number;
  /** Timers whose entry was gone (nothing left for them to fire). */
  readonly dropped: number;
}

const numbers = jsonStoreSerde<number>();

/**
 * Places the entries of one store under `partitions` partitions. `placedKeys` holds, per store
 * already placed, where each of its keys went (for companions). Pure: the copy's logic, testable
 * without Kafka.
 */
export function placeStore(
  content: TopicContent,
  placement: Placement,
  partitions: number,
  placedKeys: ReadonlyMap<string, ReadonlyMap<string, number>>,
): { placed: Map<number, Map<string, Buffer>>; dropped: number } {
  const placed = new Map<number, Map<string, Buffer>>(Array.from({ length: partitions }, (_, p) => [p, new Map<string, Buffer>()]));
  let dropped = 0;
  if (placement.kind === 'per-partition') {
    const byKey = new Map<string, number[]>();
    for (const entries of content.values()) for (const [key, value] of entries) byKey.set(key, [...(byKey.get(key) ?? []), numbers.deserialize(value)]);
    for (const [key, values] of byKey) {
      const combined = placement.combine === 'max' ? Math.max(...values) : Math.ceil(values.reduce((a, b) => a + b, 0) / partitions);
      for (const entries of placed.values()) entries.set(key, numbers.serialize(combined));
    }
    return { placed, dropped };
  }
  for (const entries of content.values()) {
    const split = placement.kind === 'owner' ? placement.split : undefined;
    for (const [key, value] of split ? [...entries].flatMap(([k, v]) => split(k, v)) : entries) {
      const partition = placement.kind === 'owner' ? partitionOf(placement.owner(key, value), partitions) : placedKeys.get(placement.store)?.get(key);
      if (partition === undefined) dropped++;
      else placed.get(partition)!.set(key, value);
    }
  }
  return { placed, dropped };
}

/** Refuses when a group of the new generation has members or committed offsets: its workers have started. */
async function refuseStartedGeneration(admin: Admin, to: Generation): Promise<void> {
  for (const group of generationGroups(to)) {
    const status = await groupStatus(admin, group);
    if (status.members.length > 0 || status.topics.length > 0)
      throw new ConfigError(
        '--to-app',
        `${group} has already run (members or committed offsets): the state copy must happen before the new generation's workers start`,
      );
  }
}

/** Copies every changelog of `from` to `to`, re-keyed for `partitions` partitions. */
export async function copyState(from: Generation, to: Generation, partitions: number, endpoints: Endpoints = readEndpoints()): Promise<StoreCopy[]> {
  const kafka = kafkaClient(endpoints, { clientId: 'pushctl-repartition' });
  const admin = repartitionAdmin(endpoints);
  await admin.connect();
  const producer = kafka.producer({
    transactionalId: `${to.applicationId}-repartition`,
    idempotent: true,
    maxInFlightRequests: 1,
    transactionTimeout: 300_000,
  });
  await producer.connect();
  const copies: StoreCopy[] = [];
  try {
    await refuseStartedGeneration(admin, to);
    for (const { stage, stores } of statefulStages()) {
      const topics = stores.map(([store, placement]) => ({
        store,
        placement,
        source: stageChangelog(from, stage, store),
        target: stageChangelog(to, stage, store),
      }));
      const counts = await partitionCounts(
        admin,
        topics.flatMap((t) => [t.source, t.target]),
      );
      const present = topics.filter((t) => counts.has(t.source)); // a stage that never ran in the old generation has none
      for (const t of present)
        if (counts.get(t.target) !== partitions)
          throw new ConfigError('--to', `${t.target} has ${counts.get(t.target) ?? 'no'} partitions, not ${partitions}: run pushctl repartition prepare first`);
      const contents = await readLatest(
        kafka,
        admin,
        present.map((t) => t.source),
        `${to.applicationId}-repartition`,
      );
      const placedKeys = new Map<string, Map<string, number>>();
      for (const t of present) {
        const content = contents.get(t.source)!;
        const { placed, dropped } = placeStore(content, t.placement, partitions, placedKeys);
        placedKeys.set(t.store, new Map([...placed].flatMap(([p, entries]) => [...entries.keys()].map((k) => [k, p] as const))));
        const written = await writeChangelog(producer, t.target, placed);
        copies.push({ from: t.source, to: t.target, read: entryCount(content), written, dropped });
      }
    }
    return copies;
  } finally {
    await producer.disconnect();
    await admin.disconnect();
  }
}

/** Writes the placed entries in one transaction; returns how many. */
async function writeChangelog(producer: ReturnType<Kafka['producer']>, topic: string, placed: Map<number, Map<string, Buffer>>): Promise<number> {
  const messages = [...placed].flatMap(([partition, entries]) => [...entries].map(([key, value]) => ({ key, value, partition })));
  if (messages.length === 0) return 0;
  const tx = await producer.transaction();
  try {
    for (let i = 0; i < messages.length; i += 5000) await tx.send({ topic, messages: messages.slice(i, i + 5000) });
    await tx.commit();
  } catch (error) {
    await tx.abort().catch(() => undefined);
    throw error;
  }
  return messages.length;
}
