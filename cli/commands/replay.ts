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
import { parseDuration } from '../../pipeline/duration.ts';
import { ConfigError } from '../../common/errors.ts';
import { UsageError } from '../args.ts';
import { REPLAY_HEADER } from '../../processors/fan-out/fan-out.ts';
import { TASK_STATUS } from '../../processors/shared/task-status.ts';
import type { DispatchKind } from '../../processors/shared/records.ts';
import { decodeTaskPayload } from '../../sinks/mysql/tasks.ts';
import { VENDOR_CHANNELS } from '../../sinks/vendors/channels.ts';

export const replayHelp = `pushctl replay --since <duration> [--until <duration>] [--vendor V] [--app A] [--dry-run]

  re-submits failed push tasks (im_push_task status 3) whose failure lies in the time range
  (e.g. --since 2h --until 30m: from two hours ago to thirty minutes ago), optionally of one vendor
  or app:
  finds their dispatch records on push.dispatch, keeps only channels whose token is still valid
  in im_push_token (dead tokens are never retried), sets the tasks back to pending and produces
  the dispatches again. The fan-out submits each at most once, under the same collapse id.

pushctl replay --from tasks --since <time> [--until <time>] [--uid U] [--vendor V] [--app A] [--dry-run]

  re-sends the push tasks claimed in the time range (--since and --until: a duration back from now
  such as 2h, or an ISO time such as 2026-12-01T10:00:00Z), optionally of one user, vendor or app, from
  im_push_task alone, whatever the topics still hold: each task that was submitted, delivered or
  failed is sent again with the payload (title and summary), unread count and collapse id it was
  first sent with (docs/data.md), through the fan-out like any dispatch, on the device's tokens
  still valid in im_push_token (its last vendor first). Tasks written before those columns existed
  are counted and left out.`;

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

/** A duration back from `now` (2h) or an ISO 8601 time (2026-12-01T10:00:00Z), as epoch ms. */
function timeOption(text: string, flag: string, now: number): number {
  if (/^\d{4}-\d{2}-\d{2}/.test(text)) {
    const at = Date.parse(text);
    if (Number.isNaN(at)) throw new UsageError(`${flag} ${text}: expected a duration such as 2h or an ISO time such as 2026-12-01T10:00:00Z`);
    return at;
  }
  return now - parseDuration(text, flag);
}

interface StoredTaskRow {
  task_id: string;
  uid: string;
  conv_id: string;
  seq: number;
  device_id: string;
  msg_id: string;
  app_id: string;
  platform: string;
  vendor: string;
  unread_cnt: number;
  payload: Buffer | null;
  collapse_key: string;
  merge_kind: string;
  created_at: Date;
}

const KINDS: ReadonlySet<string> = new Set<DispatchKind>(['LEADING', 'TRAILING', 'IMMEDIATE', 'DEFERRED']);

/**
 * The dispatch of a stored task as it was first sent: its payload, unread count, collapse id and
 * kind from the row (docs/data.md), on the device's valid tokens of the task's app, the vendor that
 * answered last first, then the policy's fallback order. Undefined for a row written before the
 * payload column (nothing to resend) or a device without a valid token.
 */
function dispatchOfTask(
  row: StoredTaskRow,
  tokens: ReadonlyArray<{ device_id: string; vendor: string; app_id: string; token: string }>,
  silentTrailing: boolean,
  now: number,
) {
  const text = decodeTaskPayload(row.payload);
  if (text === null || row.collapse_key === '' || !KINDS.has(row.merge_kind)) return undefined;
  const rank = (vendor: string) =>
    vendor === row.vendor ? -1 : VENDOR_CHANNELS.priority.indexOf(vendor) === -1 ? 99 : VENDOR_CHANNELS.priority.indexOf(vendor);
  const channels = tokens
    .filter((t) => t.device_id === row.device_id && t.app_id === row.app_id)
    .sort((a, b) => rank(a.vendor) - rank(b.vendor))
    .map((t) => ({ vendor: t.vendor, token: t.token, classification: VENDOR_CHANNELS.imClassification(t.vendor) }));
  if (channels.length === 0) return undefined;
  const kind = row.merge_kind as DispatchKind;
  const value: PushDispatch = {
    task_id: row.task_id,
    uid: row.uid,
    device_id: row.device_id,
    conv_id: row.conv_id,
    seq: Number(row.seq),
    msg_id: row.msg_id,
    app_id: row.app_id,
    platform: row.platform,
    channels,
    title: text.title,
    body: text.body,
    badge: Number(row.unread_cnt),
    collapse_id: row.collapse_key,
    // The merge sends its trailing update silently in the leading mode (PUSH_MERGE_MODE).
    silent: kind === 'TRAILING' && silentTrailing,
    kind,
    merged_count: 1,
    // The claim follows the persisted message by the pipeline's latency; the row keeps only the claim time.
    persisted_at: row.created_at.getTime(),
    decided_at: now,
  };
  return { key: row.uid, value };
}

/** `pushctl replay --from tasks`: re-sends the tasks of a time range from im_push_task alone. */
async function replayFromTasks(args: string[]): Promise<number> {
  const since = option(args, '--since');
  if (!since) throw new UsageError('--since is required (from when tasks are re-sent, e.g. --since 2h or --since 2026-12-01T10:00:00Z)');
  const until = option(args, '--until');
  const now = Date.now();
  const fromMs = timeOption(since, '--since', now);
  const untilMs = until === undefined ? now : timeOption(until, '--until', now);
  if (fromMs >= untilMs) throw new UsageError(`--since ${since} is not earlier than --until ${until ?? 'now'}: the range would be empty`);
  const uid = option(args, '--uid');
  const vendor = option(args, '--vendor');
  const app = option(args, '--app');
  const endpoints = readEndpoints();
  const prefix = readKey(process.env, CONFIG_KEYS.PUSH_TOPIC_PREFIX);
  const silentTrailing = readKey(process.env, CONFIG_KEYS.PUSH_MERGE_MODE) === 'leading';
  const db = await mysql.createConnection({ uri: endpoints.mysqlUrl, timezone: 'Z' });
  try {
    // Submitted, delivered and failed tasks (a pending one is still in the fan-out's hands); by
    // (uid, status, created_at) with --uid, else by created_at.
    const resent = [TASK_STATUS.submitted, TASK_STATUS.delivered, TASK_STATUS.failed];
    const [rows] = await db.query(
      'SELECT task_id, uid, conv_id, seq, device_id, msg_id, app_id, platform, vendor, unread_cnt, payload, collapse_key, merge_kind, created_at ' +
        `FROM im_push_task WHERE status IN (?) AND created_at >= ? AND created_at < ?${uid ? ' AND uid = ?' : ''}${vendor ? ' AND vendor = ?' : ''}${app ? ' AND app_id = ?' : ''} ORDER BY id`,
      [resent, new Date(fromMs), new Date(untilMs), ...(uid ? [uid] : []), ...(vendor ? [vendor] : []), ...(app ? [app] : [])],
    );
    const tasks = rows as StoredTaskRow[];
    console.log(`${tasks.length} task(s) in range${uid ? ` for ${uid}` : ''}${vendor ? ` last sent through ${vendor}` : ''}${app ? ` of ${app}` : ''}`);
    if (tasks.length === 0) return 0;
    const [tokenRows] = await db.query('SELECT device_id, vendor, app_id, token FROM im_push_token WHERE status = 1 AND device_id IN (?)', [
      [...new Set(tasks.map((t) => t.device_id))],
    ]);
    const tokens = tokenRows as Array<{ device_id: string; vendor: string; app_id: string; token: string }>;
    const replayable = tasks.flatMap((t) => dispatchOfTask(t, tokens, silentTrailing, now) ?? []);
    const noPayload = tasks.filter((t) => decodeTaskPayload(t.payload) === null).length;
    console.log(
      `${replayable.length} with their payload and a valid token; ${noPayload} written before the payload column (left out), ${tasks.length - replayable.length - noPayload} without a valid token`,
    );
    if (args.includes('--dry-run') || replayable.length === 0) return 0;
    await resend(db, resent, { endpoints, prefix, replayable, now });
    return 0;
  } finally {
    await db.end();
  }
}

interface Replay {
  readonly endpoints: ReturnType<typeof readEndpoints>;
  readonly prefix: string;
  readonly replayable: ReadonlyArray<{ key: string; value: PushDispatch }>;
  readonly now: number;
}

/** Sets the tasks (those in one of `statuses`) back to pending, then produces their dispatches again. */
async function resend(db: mysql.Connection, statuses: readonly number[], replay: Replay): Promise<void> {
  await db.query(`UPDATE im_push_task SET status = ${TASK_STATUS.pending}, fail_code = NULL WHERE status IN (?) AND task_id IN (?)`, [
    statuses,
    replay.replayable.map((d) => d.value.task_id),
  ]);
  await produceReplays(replay);
  console.log(`replayed ${replay.replayable.length} task(s)`);
}

/** Produces the dispatches to push.dispatch with the replay header (the fan-out reads their task rows again). */
async function produceReplays({ endpoints, prefix, replayable, now }: Replay): Promise<void> {
  const kafka = new Kafka({ clientId: 'pushctl-replay', brokers: endpoints.kafkaBrokers, logLevel: logLevel.NOTHING });
  const serde = registryValueSerdes(new SchemaRegistry({ host: endpoints.schemaRegistryUrl }), prefix)('dispatch');
  const topic = topicName('dispatch', prefix);
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    const headers = { [REPLAY_HEADER]: new Date(now).toISOString() };
    const messages = await Promise.all(replayable.map(async (d) => ({ key: d.key, value: await serde.serialize(topic, d.value), headers })));
    await producer.send({ topic, messages, acks: -1 });
  } finally {
    await producer.disconnect();
  }
}

export async function replayCommand(args: string[]): Promise<number> {
  const from = option(args, '--from') ?? 'topic';
  if (from === 'tasks') return replayFromTasks(args);
  if (from !== 'topic') throw new UsageError(`--from ${from}: expected tasks (im_push_task) or topic (push.dispatch, the default)`);
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

    await resend(db, [TASK_STATUS.failed], { endpoints, prefix, replayable, now });
    return 0;
  } finally {
    await db.end();
  }
}
