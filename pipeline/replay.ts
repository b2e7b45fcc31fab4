/**
 * The replay operations of `pushctl replay` (cli/commands/replay.ts): re-sending failed push tasks
 * from their dispatch records on push.dispatch, or any claimed tasks from im_push_task alone. Both
 * set the tasks back to pending and produce the dispatches again with the replay header. They take
 * plain options (times already resolved to epoch ms) and report their counts through `progress`
 * as they go, so the caller prints each step when it happens.
 */
import type { Kafka } from 'kafkajs';
import { kafkaClient } from '../common/kafka-client.ts';
import { schemaRegistryClient } from '../common/registry-client.ts';
import mysql from 'mysql2/promise';
import { randomBytes } from 'node:crypto';
import { readEndpoints } from '../common/endpoints.ts';
import { readKey } from '../common/config.ts';
import { CONFIG_KEYS } from '../common/config-keys.ts';
import { ConfigError } from '../common/errors.ts';
import { registryValueSerdes } from './serdes.ts';
import { topicName } from './topics.ts';
import { REPLAY_HEADER } from '../processors/fan-out/fan-out.ts';
import { TASK_STATUS } from '../processors/model/task-status.ts';
import type { DispatchKind, PushDispatch } from '../processors/model/records.ts';
import { decodeTaskPayload } from '../sinks/mysql/tasks.ts';
import { shardUrlOf } from '../sinks/mysql/shards.ts';
import { VENDOR_CHANNELS } from '../sinks/vendors/channels.ts';
import { mysqlClientOptions, type MysqlSecurity } from '../common/mysql-url.ts';

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

/** The columns of a StoredTaskRow. */
const TASK_COLUMNS = 'task_id, uid, conv_id, seq, device_id, msg_id, app_id, platform, vendor, unread_cnt, payload, collapse_key, merge_kind, created_at';

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

/** Which tasks `replayTasks` re-sends: those claimed in [fromMs, untilMs), optionally of one user, vendor (last sent through) or app. */
export interface TaskReplayOptions {
  readonly fromMs: number;
  readonly untilMs: number;
  readonly uid?: string;
  readonly vendor?: string;
  readonly app?: string;
  /** Count only: nothing is reset or produced. */
  readonly dryRun: boolean;
  /** The replay's time, epoch ms (the replay header, the dispatches' decided_at). */
  readonly now: number;
}

/** What `replayTasks` found, reported as soon as each count is known. */
export interface TaskReplayProgress {
  /** The tasks in range (submitted, delivered or failed). */
  onTasks?(count: number): void;
  /** Of those, how many can be re-sent, how many predate the payload column, how many have no valid token. */
  onSelected?(counts: { replayable: number; noPayload: number; noToken: number }): void;
}

/**
 * `pushctl replay --from tasks`: re-sends the tasks of a time range from im_push_task alone, each
 * with the payload, unread count and collapse id it was first sent with, on the device's tokens
 * still valid. Returns how many tasks were replayed (0 on a dry run or when none qualifies).
 */
export async function replayTasks(options: TaskReplayOptions, progress: TaskReplayProgress = {}): Promise<number> {
  const { fromMs, untilMs, uid, vendor, app, now } = options;
  const endpoints = readEndpoints();
  const prefix = readKey(process.env, CONFIG_KEYS.PUSH_TOPIC_PREFIX);
  const silentTrailing = readKey(process.env, CONFIG_KEYS.PUSH_MERGE_MODE) === 'leading';
  // The user's shard with --uid, else every shard (sinks/mysql/shards.ts); a task's tokens are on its user's shard.
  const shards = await openShards(endpoints.mysqlShards, endpoints.mysqlSecurity, uid);
  try {
    // Submitted, delivered and failed tasks (a pending one is still in the fan-out's hands); by
    // (uid, status, created_at) with --uid, else by created_at.
    const resent = [TASK_STATUS.submitted, TASK_STATUS.delivered, TASK_STATUS.failed];
    const found: Array<{ db: mysql.Connection; tasks: StoredTaskRow[] }> = [];
    for (const db of shards) {
      const [rows] = await db.query(
        `SELECT ${TASK_COLUMNS} FROM im_push_task WHERE status IN (?) AND created_at >= ? AND created_at < ?${uid ? ' AND uid = ?' : ''}${vendor ? ' AND vendor = ?' : ''}${app ? ' AND app_id = ?' : ''} ORDER BY id`,
        [resent, new Date(fromMs), new Date(untilMs), ...(uid ? [uid] : []), ...(vendor ? [vendor] : []), ...(app ? [app] : [])],
      );
      found.push({ db, tasks: rows as StoredTaskRow[] });
    }
    const total = found.reduce((n, f) => n + f.tasks.length, 0);
    progress.onTasks?.(total);
    if (total === 0) return 0;
    const targets: ResetTarget[] = [];
    let noPayload = 0;
    for (const { db, tasks } of found) {
      if (tasks.length === 0) continue;
      const [tokenRows] = await db.query('SELECT device_id, vendor, app_id, token FROM im_push_token WHERE status = 1 AND device_id IN (?)', [
        [...new Set(tasks.map((t) => t.device_id))],
      ]);
      const tokens = tokenRows as Array<{ device_id: string; vendor: string; app_id: string; token: string }>;
      targets.push({ db, replayable: tasks.flatMap((t) => dispatchOfTask(t, tokens, silentTrailing, now) ?? []) });
      noPayload += tasks.filter((t) => decodeTaskPayload(t.payload) === null).length;
    }
    const replayable = targets.reduce((n, t) => n + t.replayable.length, 0);
    progress.onSelected?.({ replayable, noPayload, noToken: total - replayable - noPayload });
    if (options.dryRun || replayable === 0) return 0;
    await resend(targets, resent, { endpoints, prefix, now });
    return replayable;
  } finally {
    await Promise.allSettled(shards.map((db) => db.end()));
  }
}

/**
 * A connection to each shard in shard order, or to `uid`'s shard alone (sinks/mysql/shards.ts).
 * All or nothing: a shard that cannot be reached fails the operation before anything is changed.
 */
async function openShards(urls: readonly string[], security: MysqlSecurity, uid?: string): Promise<mysql.Connection[]> {
  const connections: mysql.Connection[] = [];
  try {
    for (const url of uid === undefined ? urls : [shardUrlOf(urls, uid)])
      connections.push(await mysql.createConnection({ ...mysqlClientOptions(url, security), timezone: 'Z' }));
    return connections;
  } catch (error) {
    await Promise.allSettled(connections.map((db) => db.end()));
    throw error;
  }
}

/** Which failed tasks `replayFailed` re-submits: those whose failure lies in [fromMs, untilMs), optionally of one vendor or app. */
export interface FailedReplayOptions {
  readonly fromMs: number;
  readonly untilMs: number;
  readonly vendor?: string;
  readonly app?: string;
  /** Count only: nothing is reset or produced. */
  readonly dryRun: boolean;
  /** The replay's time, epoch ms (the replay header). */
  readonly now: number;
}

/** What `replayFailed` found, reported as soon as each count is known. */
export interface FailedReplayProgress {
  /** The failed tasks in range. */
  onFailed?(count: number): void;
  /**
   * Their dispatch records found on push.dispatch, the tasks rebuilt from their rows instead (no
   * record there: the fused pipeline writes push.dispatch only as a tap), and how many of all those
   * keep a valid token.
   */
  onDispatches?(counts: { found: number; rebuilt: number; replayable: number }): void;
}

/**
 * `pushctl replay` (from the topic): re-submits the failed tasks of a time range from their
 * dispatch records on push.dispatch, keeping only channels whose token is still valid in
 * im_push_token; a task without a record there is rebuilt from its row, as `replayTasks` does.
 * Returns how many tasks were replayed (0 on a dry run or when none qualifies).
 */
export async function replayFailed(options: FailedReplayOptions, progress: FailedReplayProgress = {}): Promise<number> {
  const { fromMs, untilMs, vendor, app, now } = options;
  const endpoints = readEndpoints();
  const prefix = readKey(process.env, CONFIG_KEYS.PUSH_TOPIC_PREFIX);
  const silentTrailing = readKey(process.env, CONFIG_KEYS.PUSH_MERGE_MODE) === 'leading';
  const shards = await openShards(endpoints.mysqlShards, endpoints.mysqlSecurity);
  try {
    const failed: Array<{ db: mysql.Connection; tasks: StoredTaskRow[] }> = [];
    for (const db of shards) {
      const [rows] = await db.query(
        `SELECT ${TASK_COLUMNS} FROM im_push_task WHERE status = ${TASK_STATUS.failed} AND updated_at >= ? AND updated_at < ?${vendor ? ' AND vendor = ?' : ''}${app ? ' AND app_id = ?' : ''}`,
        [new Date(fromMs), new Date(untilMs), ...(vendor ? [vendor] : []), ...(app ? [app] : [])],
      );
      failed.push({ db, tasks: rows as StoredTaskRow[] });
    }
    const total = failed.reduce((n, f) => n + f.tasks.length, 0);
    progress.onFailed?.(total);
    if (total === 0) return 0;

    const kafka = kafkaClient(endpoints, { clientId: 'pushctl-replay' });
    const serde = registryValueSerdes(schemaRegistryClient(endpoints), prefix)('dispatch');
    const topic = topicName('dispatch', prefix);
    // A dispatch is decided before it fails; look back one more hour for its record.
    const dispatches = await findDispatches(
      kafka,
      topic,
      fromMs - 3_600_000,
      new Set(failed.flatMap((f) => f.tasks.map((t) => t.task_id))),
      async (b) => (await serde.deserialize(topic, b)) as PushDispatch,
    );

    // Each task's tokens are on its user's shard, where its row is.
    const targets: ResetTarget[] = [];
    for (const { db, tasks } of failed) {
      if (tasks.length === 0) continue;
      const [tokenRows] = await db.query('SELECT device_id, vendor, app_id, token FROM im_push_token WHERE status = 1 AND device_id IN (?)', [
        [...new Set(tasks.map((t) => t.device_id))],
      ]);
      const tokens = tokenRows as Array<{ device_id: string; vendor: string; app_id: string; token: string }>;
      const valid = new Set(tokens.map((t) => `${t.device_id}|${t.vendor}|${t.token}`));
      const replayable = tasks.flatMap((t) => {
        const found = dispatches.get(t.task_id);
        if (!found) return dispatchOfTask(t, tokens, silentTrailing, now) ?? [];
        const channels = found.value.channels.filter((c) => valid.has(`${found.value.device_id}|${c.vendor}|${c.token}`));
        return channels.length > 0 ? [{ key: found.key, value: { ...found.value, channels } }] : [];
      });
      targets.push({ db, replayable });
    }
    const replayable = targets.reduce((n, t) => n + t.replayable.length, 0);
    progress.onDispatches?.({ found: dispatches.size, rebuilt: total - dispatches.size, replayable });
    if (options.dryRun || replayable === 0) return 0;

    await resend(targets, [TASK_STATUS.failed], { endpoints, prefix, now });
    return replayable;
  } finally {
    await Promise.allSettled(shards.map((db) => db.end()));
  }
}

interface Replay {
  readonly endpoints: ReturnType<typeof readEndpoints>;
  readonly prefix: string;
  readonly replayable: ReadonlyArray<{ key: string; value: PushDispatch }>;
  readonly now: number;
}

/** The dispatches to re-send of one shard, with that shard's connection. */
interface ResetTarget {
  readonly db: mysql.Connection;
  readonly replayable: ReadonlyArray<{ key: string; value: PushDispatch }>;
}

/**
 * Sets the tasks (those in one of `statuses`) back to pending on their shards, with no answer recorded
 * (the fan-out resumes a pending task after the answers its row holds: docs/design.md,
 * "Takeover"), then produces their dispatches again.
 */
async function resend(targets: readonly ResetTarget[], statuses: readonly number[], replay: Omit<Replay, 'replayable'>): Promise<void> {
  for (const { db, replayable } of targets) {
    if (replayable.length === 0) continue;
    const reset = `status = ${TASK_STATUS.pending}, fail_code = NULL, channel_trail = NULL, attempts = 0`;
    await db.query(`UPDATE im_push_task SET ${reset} WHERE status IN (?) AND task_id IN (?)`, [statuses, replayable.map((d) => d.value.task_id)]);
  }
  await produceReplays({ ...replay, replayable: targets.flatMap((t) => t.replayable) });
}

/** Produces the dispatches to push.dispatch with the replay header (the fan-out reads their task rows again). */
async function produceReplays({ endpoints, prefix, replayable, now }: Replay): Promise<void> {
  const kafka = kafkaClient(endpoints, { clientId: 'pushctl-replay' });
  const serde = registryValueSerdes(schemaRegistryClient(endpoints), prefix)('dispatch');
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
