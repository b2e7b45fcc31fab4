/**
 * Whether the old generation may be cut over (docs/operations.md "Growing partitions", step 3):
 * its producers have moved on (no topic of it grows during a quiet period), none of its workers
 * runs (every consumer group empty, so no punctuator writes a record after the state copy), and
 * every record of its streams was processed (no lag). Lag on a table topic (push.tokens,
 * push.settings, push.campaign-control) is allowed: tables are carried to the new generation
 * whole (copy-tables.ts), so a token invalidation the fan-out wrote after the decisions stopped
 * is read there.
 */
import type { Admin } from 'kafkajs';
import { groupStatus } from '../group-status.ts';
import { topicName } from '../topics.ts';
import { generationGroups, generationTopics, TABLE_TOPICS, type Generation } from './generation.ts';

export interface DrainReport {
  /** Groups with members: workers of the old generation still running. */
  readonly running: Array<{ group: string; members: number }>;
  /** Stream partitions a stopped group has not processed to the end. */
  readonly lagging: Array<{ group: string; topic: string; partition: number; lag: number }>;
  /** Topics of the old generation that grew during the quiet period: a producer still writes there. */
  readonly growing: Array<{ topic: string; records: number }>;
  /** Groups that have run (they committed offsets), the ones whose state is copied. */
  readonly groupsSeen: string[];
  /** No topic of the old generation exists: its prefix is wrong (nothing to cut over). */
  readonly missing: boolean;
}

export const drained = (r: DrainReport): boolean => !r.missing && r.running.length === 0 && r.lagging.length === 0 && r.growing.length === 0;

/** End offsets (read_committed) of every partition of the topics that exist. */
async function endOffsets(admin: Admin, topics: readonly string[]): Promise<Map<string, number>> {
  const existing = new Set(await admin.listTopics());
  const ends = new Map<string, number>();
  for (const topic of topics.filter((t) => existing.has(t)))
    for (const p of await admin.fetchTopicOffsets(topic)) ends.set(`${topic}:${p.partition}`, Number(p.high));
  return ends;
}

/** Checks the old generation: topics quiet for `quietMs`, groups empty, streams processed. */
export async function checkDrained(admin: Admin, from: Generation, quietMs: number): Promise<DrainReport> {
  const topics = generationTopics(from);
  const before = await endOffsets(admin, topics);
  await new Promise((resolve) => setTimeout(resolve, quietMs));
  const after = await endOffsets(admin, topics);
  const grew = new Map<string, number>();
  for (const [tp, end] of after) {
    const added = end - (before.get(tp) ?? 0);
    if (added > 0) {
      const topic = tp.slice(0, tp.lastIndexOf(':'));
      grew.set(topic, (grew.get(topic) ?? 0) + added);
    }
  }
  const tables = new Set(TABLE_TOPICS.map((k) => topicName(k, from.prefix)));
  const running: DrainReport['running'] = [];
  const lagging: DrainReport['lagging'] = [];
  const groupsSeen: string[] = [];
  for (const group of generationGroups(from)) {
    const status = await groupStatus(admin, group);
    if (status.members.length > 0) running.push({ group, members: status.members.length });
    if (status.topics.length > 0) groupsSeen.push(group);
    for (const t of status.topics) {
      if (tables.has(t.topic)) continue;
      for (const p of t.partitions) if (p.lag > 0) lagging.push({ group, topic: t.topic, partition: p.partition, lag: p.lag });
    }
  }
  return { running, lagging, growing: [...grew].map(([topic, records]) => ({ topic, records })), groupsSeen, missing: after.size === 0 };
}

/** The report in lines an operator can act on. */
export function describeDrain(r: DrainReport): string[] {
  return [
    ...(r.missing ? ['no topic of the old generation exists: check --from-prefix (default PUSH_TOPIC_PREFIX)'] : []),
    ...r.growing.map((g) => `${g.topic} grew by ${g.records} records during the quiet period: a producer still writes to the old generation`),
    ...r.running.map((g) => `${g.group} has ${g.members} member(s): stop the old generation's workers of this stage`),
    ...r.lagging.map((l) => `${l.group} left ${l.lag} record(s) of ${l.topic} partition ${l.partition}: run the stage again until it drains, then stop it`),
  ];
}
