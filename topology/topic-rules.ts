import type { Admin, ConfigResourceTypes } from 'kafkajs';
import type { Logger } from '../common/log.ts';
import { errorMessage } from '../common/errors.ts';
import { RECORD_BATCH_OVERHEAD_BYTES } from './record-size.ts';

/** kafkajs' ConfigResourceTypes.TOPIC: the enum is not among kafkajs' ES-module named exports. */
export const TOPIC_RESOURCE = 2 as ConfigResourceTypes;

/** What the broker will refuse from a task's writes to one topic, checked per record at the sink node. */
export interface TopicRules {
  /** Largest key + value + headers (topology/record-size.ts), bytes. */
  readonly maxRecordBytes: number;
  /** A compacted topic refuses records without a key (INVALID_RECORD), and so the whole transaction. */
  readonly keyRequired: boolean;
}

/**
 * `max.message.bytes` the runtime gives a DLQ topic it creates. A DLQ record is an input record
 * (at most its own topic's limit, 1 MB by default) or an output refused for its size, plus reason
 * headers of a few kB: so the DLQ must take records larger than the topics it collects from, or
 * the record that is too large for its output topic would be too large for the DLQ as well.
 * 8 MiB leaves room for input topics whose limit was raised; a DLQ record over the DLQ's limit
 * anyway loses its value (dlq.ts, fitDeadLetter), so writing it can never fail the commit.
 */
export const DLQ_MAX_MESSAGE_BYTES = 8 * 1024 * 1024;

/**
 * Reads `max.message.bytes` and `cleanup.policy` of the topics that exist. The record limit of a
 * sink node's topic is the smaller of `maxRecordBytes` and its own limit less batch overhead; the
 * DLQ keeps its own limit (it must take records near the other topics' limits). Topics that do not
 * exist yet, or a broker that will not describe them, get `maxRecordBytes` and no key rule.
 */
export async function readTopicRules(
  admin: Admin,
  sinkTopics: readonly string[],
  dlqTopic: string,
  maxRecordBytes: number,
  log?: Logger,
): Promise<Map<string, TopicRules>> {
  const rules = new Map<string, TopicRules>();
  try {
    const existing = new Set(await admin.listTopics());
    const names = [...new Set([...sinkTopics, dlqTopic])].filter((t) => existing.has(t));
    if (names.length === 0) return rules;
    const { resources } = await admin.describeConfigs({
      includeSynonyms: false,
      resources: names.map((name) => ({ type: TOPIC_RESOURCE, name, configNames: ['max.message.bytes', 'cleanup.policy'] })),
    });
    for (const r of resources) {
      if (r.errorCode !== 0) continue;
      const config = (name: string) => r.configEntries.find((e) => e.configName === name)?.configValue;
      const topicLimit = Number(config('max.message.bytes')) - RECORD_BATCH_OVERHEAD_BYTES;
      const limit =
        !Number.isFinite(topicLimit) || topicLimit <= 0 ? maxRecordBytes : r.resourceName === dlqTopic ? topicLimit : Math.min(maxRecordBytes, topicLimit);
      rules.set(r.resourceName, { maxRecordBytes: limit, keyRequired: (config('cleanup.policy') ?? '').split(',').includes('compact') });
    }
  } catch (error) {
    log?.warn('topic configs unreadable; outputs are held to maxRecordBytes', { error: errorMessage(error) });
  }
  const dlq = rules.get(dlqTopic);
  if (dlq && dlq.maxRecordBytes < maxRecordBytes + 64 * 1024) {
    log?.warn('the DLQ topic takes records no larger than the other topics: large dead letters keep their reason headers but lose their value', {
      topic: dlqTopic,
      maxRecordBytes: dlq.maxRecordBytes,
      wanted: DLQ_MAX_MESSAGE_BYTES,
    });
  }
  return rules;
}
