/**
 * A topic generation of the pipeline: its topic prefix (PUSH_TOPIC_PREFIX) and application id
 * (PUSH_APPLICATION_ID, which names its consumer groups, changelogs and transactional ids). Moving
 * to another partition count is a move from one generation to a new one created with that count
 * (docs/operations.md "Growing partitions"): never in place, because adding partitions to a
 * uid-keyed topic sends a uid's new records to another partition than its old records and its state.
 */
import type { Admin } from 'kafkajs';
import { kafkaClient } from '../../common/kafka-client.ts';
import { schemaRegistryClient } from '../../common/registry-client.ts';
import { ConfigError } from '../../common/errors.ts';
import { readEndpoints, type Endpoints } from '../../common/endpoints.ts';
import { changelogTopicName, ensureTopics } from '../../topology/changelog.ts';
import { keyPartition } from '../../topology/partitioner.ts';
import type { TopicReplication } from '../../topology/create-topics.ts';
import { STAGE_DEFINITIONS, STAGES, type StageName } from '../apps/index.ts';
import { registerSchemas } from '../schemas.ts';
import { createPipelineTopics } from '../topics-admin.ts';
import { readReplication } from '../worker-config.ts';
import { TOPICS, topicName, type TopicKey } from '../topics.ts';
import type { Placement } from './store-keys.ts';

export interface Generation {
  /** PUSH_TOPIC_PREFIX of this generation. */
  readonly prefix: string;
  /** PUSH_APPLICATION_ID of this generation. */
  readonly applicationId: string;
}

/** The consumer group (and changelog prefix) of one application of a generation, as pipeline/worker.ts names it. */
export const stageGroup = (g: Generation, stage: StageName): string => `${g.applicationId}-${stage}`;

/** The changelog topic of `store` of `stage` in generation `g`. */
export const stageChangelog = (g: Generation, stage: StageName, store: string): string => changelogTopicName(stageGroup(g, stage), store);

/** Every consumer group the generation's workers use (one per application). */
export const generationGroups = (g: Generation): string[] => STAGES.map((s) => stageGroup(g, s));

/** The compacted pipeline topics: tables, whose latest value per key is the content. */
export const TABLE_TOPICS: readonly TopicKey[] = (Object.keys(TOPICS) as TopicKey[]).filter(
  (k) => (TOPICS[k] as { configs?: Record<string, string> }).configs?.['cleanup.policy'] === 'compact',
);

/**
 * The partition a record with this key goes to among `partitions`, as every producer of the
 * pipeline picks it (Kafka's default partitioner: murmur2 of the key's UTF-8 bytes, as Java's).
 */
export const partitionOf: (key: string, partitions: number) => number = keyPartition;

export function repartitionAdmin(endpoints: Endpoints = readEndpoints()): Admin {
  return kafkaClient(endpoints, { clientId: 'pushctl-repartition' }).admin();
}

/** Partitions of each existing topic among `topics`. */
export async function partitionCounts(admin: Admin, topics: readonly string[]): Promise<Map<string, number>> {
  const existing = new Set(await admin.listTopics());
  const present = topics.filter((t) => existing.has(t));
  if (present.length === 0) return new Map();
  const { topics: meta } = await admin.fetchTopicMetadata({ topics: present });
  return new Map(meta.map((t) => [t.name, t.partitions.length]));
}

/** The internal topics of the generation's applications (the receipts application's repartitions). */
const internalTopics = (g: Generation): string[] => STAGES.flatMap((s) => STAGE_DEFINITIONS[s].internalTopics?.(g.prefix) ?? []);

/** Every topic of the generation beside the changelogs: the pipeline's topics and the applications' internal ones. */
export const generationTopics = (g: Generation): string[] => [...(Object.keys(TOPICS) as TopicKey[]).map((k) => topicName(k, g.prefix)), ...internalTopics(g)];

/** Every changelog a generation's applications use: one per store their definitions place. */
export const generationChangelogs = (g: Generation): Array<{ stage: StageName; store: string; topic: string }> =>
  STAGES.flatMap((stage) => Object.keys(STAGE_DEFINITIONS[stage].stores).map((store) => ({ stage, store, topic: stageChangelog(g, stage, store) })));

/** The applications with changelogged stores, and their stores in the order a copy handles them (companions after their stores). */
export function statefulStages(): Array<{ stage: StageName; stores: Array<[string, Placement]> }> {
  return STAGES.map((stage) => ({
    stage,
    stores: Object.entries(STAGE_DEFINITIONS[stage].stores).sort(([, a], [, b]) => Number(a.kind === 'companion') - Number(b.kind === 'companion')),
  })).filter(({ stores }) => stores.length > 0);
}

/**
 * Step 1 of a repartition: creates every topic of the new generation with `partitions` partitions
 * (the pipeline's topics, the applications' internal topics and every changelog, so the
 * state copy has somewhere to go before any worker of the generation starts) and registers its
 * value schemas, so producers can switch to it at once. Idempotent; a topic already there with
 * another partition count is refused.
 */
export async function prepareGeneration(
  to: Generation,
  partitions: number,
  endpoints: Endpoints = readEndpoints(),
  replication: TopicReplication = readReplication(),
): Promise<{ created: string[] }> {
  const admin = repartitionAdmin(endpoints);
  await admin.connect();
  try {
    const all = [...generationTopics(to), ...generationChangelogs(to).map((c) => c.topic)];
    const before = await partitionCounts(admin, all);
    const wrong = [...before].filter(([, n]) => n !== partitions);
    if (wrong.length > 0)
      throw new ConfigError(
        '--to-prefix',
        `topics of the new generation exist with another partition count: ${wrong.map(([t, n]) => `${t} (${n})`).join(', ')}`,
      );
    await createPipelineTopics({ partitions, prefix: to.prefix, replication }, endpoints);
    await ensureTopics(
      admin,
      [
        ...internalTopics(to).map((topic) => ({ topic, numPartitions: partitions })),
        ...generationChangelogs(to).map((c) => ({ topic: c.topic, numPartitions: partitions, configs: { 'cleanup.policy': 'compact' } })),
      ],
      replication,
    );
    await registerSchemas(schemaRegistryClient(endpoints), { prefix: to.prefix });
    return { created: all.filter((t) => !before.has(t)) };
  } finally {
    await admin.disconnect();
  }
}
