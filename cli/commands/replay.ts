import { Kafka, logLevel } from 'kafkajs';
import mysql from 'mysql2/promise';
import { randomBytes } from 'node:crypto';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { readEndpoints } from '../../common/endpoints.ts';
import { readKey } from '../../common/config.ts';
import { CONFIG_KEYS } from '../../common/config-keys.ts';
import { registryValueSerdes } from '../../pipeline/serdes.ts';
import { topicName } from '../../pipeline/topics.ts';
import type { PushDispatch } from '../../processors/shared/records.ts';
import { parseDuration } from './arrival.ts';
import { ConfigError } from '../../common/errors.ts';
import { UsageError } from '../args.ts';
import { REPLAY_HEADER } from '../../processors/fan-out/fan-out.ts';
import { TASK_STATUS } from '../../processors/shared/task-status.ts';

export const replayHelp = `pushctl replay --since <duration> [--until <duration>] [--vendor V] [--app A] [--dry-run]

  re-submits failed push tasks (im_push_task status 3) whose failure lies in the time range
  (e.g. --since 2h --until 30m: from two hours ago to thirty minutes ago), optionally of one vendor
  or app:
  finds their dispatch records on push.dispatch, keeps only channels whose token is still valid
  in im_push_token (dead tokens are never retried), sets the tasks back to pending and produces
  the dispatches again. The fan-out submits each at most once, under the same collapse id.`;

interface FailedTask {
  task_id: string;
  vendor: string;
}

function option(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

/** Reads push.dispatch from `fromMs` to its current end and keeps the dispatches of `taskIds`. */
async function findDispatches(
  kafka: Kafka,
  topic: string,
  fromMs: number,
  taskIds: Set<string>,
  decode: (b: Buffer) => Promise<PushDispatch>,
): Promise<Map<string, { key: string; value: PushDispatch }>> {
  const admin = kafka.admin();
  await admin.connect();
  if (!(await admin.listTopics()).includes(topic)) {
    await admin.disconnect();
    throw new ConfigError('PUSH_TOPIC_PREFIX', `topic ${topic} does not exist (is the prefix right?)`);
  }
  const starts = await admin.fetchTopicOffsetsByTimestamp(topic, fromMs);
  const ends = new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, Number(p.high)]));
  await admin.disconnect();
  const pending = new Set(starts.filter((p) => Number(p.offset) < (ends.get(p.partition) ?? 0)).map((p) => p.partition));
  const found = new Map<string, { key: string; value: PushDispatch }>();
  if (pending.size === 0) return found;
  const consumer = kafka.consumer({ groupId: `pushctl-replay-${randomBytes(4).toString('hex')}` });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic] });
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  consumer.on(consumer.events.GROUP_JOIN, () => {
    for (const p of starts) consumer.seek({ topic, partition: p.partition, offset: p.offset });
  });
  await consumer.run({
    autoCommit: false,
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages) {
        if (m.value) {
          const d = await decode(m.value);
          if (taskIds.has(d.task_id)) found.set(d.task_id, { key: m.key?.toString() ?? d.uid, value: d });
        }
      }
      // The high watermark seen by the fetch can include transaction markers; stop at the end captured before reading.
      if (Number(batch.lastOffset()) + 1 >= (ends.get(batch.partition) ?? 0) - 1) pending.delete(batch.partition);
      if (pending.size === 0) done();
    },
  });
  await Promise.race([finished, new Promise((resolve) => setTimeout(resolve, 60_000))]);
  await consumer.disconnect();
  return found;
}

export async function replayCommand(args: string[]): Promise<number> {
  const since = option(args, '--since');
  if (!since) throw new UsageError('--since is required (how far back failures count, e.g. --since 2h)');
  const until = option(args, '--until');
  const sinceMs = parseDuration(since, '--since');
  const untilAgoMs = until === undefined ? 0 : parseDuration(until, '--until');
  // Both are durations back from now: the range starts --since ago and ends --until ago.
  if (untilAgoMs >= sinceMs)
    throw new UsageError(
      `--since ${since} is not earlier than --until ${until}: the range starts --since ago and ends --until ago, so --since must be the longer duration`,
    );
  const now = Date.now();
  const fromMs = now - sinceMs;
  const untilMs = now - untilAgoMs;
  const vendor = option(args, '--vendor');
  const app = option(args, '--app');
  const endpoints = readEndpoints();
  const prefix = readKey(process.env, CONFIG_KEYS.PUSH_TOPIC_PREFIX);
  const db = await mysql.createConnection({ uri: endpoints.mysqlUrl, timezone: 'Z' });
  try {
    const [rows] = await db.query(
      `SELECT task_id, vendor FROM im_push_task WHERE status = ${TASK_STATUS.failed} AND updated_at >= ? AND updated_at < ?${vendor ? ' AND vendor = ?' : ''}${app ? ' AND app_id = ?' : ''}`,
      [new Date(fromMs), new Date(untilMs), ...(vendor ? [vendor] : []), ...(app ? [app] : [])],
    );
    const failed = rows as FailedTask[];
    console.log(`${failed.length} failed task(s) in range${vendor ? ` for ${vendor}` : ''}${app ? ` of ${app}` : ''}`);
    if (failed.length === 0) return 0;

    const kafka = new Kafka({ clientId: 'pushctl-replay', brokers: endpoints.kafkaBrokers, logLevel: logLevel.NOTHING });
    const serde = registryValueSerdes(new SchemaRegistry({ host: endpoints.schemaRegistryUrl }), prefix)('dispatch');
    const topic = topicName('dispatch', prefix);
    // A dispatch is decided before it fails; look back one more hour for its record.
    const dispatches = await findDispatches(
      kafka,
      topic,
      fromMs - 3_600_000,
      new Set(failed.map((f) => f.task_id)),
      async (b) => (await serde.deserialize(topic, b)) as PushDispatch,
    );

    const [tokenRows] = await db.query('SELECT device_id, vendor, token FROM im_push_token WHERE status = 1 AND device_id IN (?)', [
      [...new Set([...dispatches.values()].map((d) => d.value.device_id))].concat(['']),
    ]);
    const valid = new Set((tokenRows as Array<{ device_id: string; vendor: string; token: string }>).map((t) => `${t.device_id}|${t.vendor}|${t.token}`));
    const replayable = [...dispatches.values()]
      .map(({ key, value }) => ({ key, value: { ...value, channels: value.channels.filter((c) => valid.has(`${value.device_id}|${c.vendor}|${c.token}`)) } }))
      .filter((d) => d.value.channels.length > 0);
    console.log(`${dispatches.size} dispatch record(s) found, ${replayable.length} with a valid token left`);
    if (args.includes('--dry-run') || replayable.length === 0) return 0;

    await db.query(`UPDATE im_push_task SET status = ${TASK_STATUS.pending}, fail_code = NULL WHERE status = ${TASK_STATUS.failed} AND task_id IN (?)`, [
      replayable.map((d) => d.value.task_id),
    ]);
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    try {
      const headers = { [REPLAY_HEADER]: new Date(now).toISOString() };
      const messages = await Promise.all(replayable.map(async (d) => ({ key: d.key, value: await serde.serialize(topic, d.value), headers })));
      await producer.send({ topic, messages, acks: -1 });
    } finally {
      await producer.disconnect();
    }
    console.log(`replayed ${replayable.length} task(s)`);
    return 0;
  } finally {
    await db.end();
  }
}
