/**
 * The running pipeline the poison suite attacks: one worker process (`pushctl run`, every stage,
 * with the receipt receiver) on the embedded environment (demo/environment.ts: the local stack,
 * all six vendor emulators, a fresh topic prefix), writing to a MariaDB database of its own as a
 * MySQL user of its own, so the suite can take that user's grants away. Beside it: producers that
 * write what an upstream team could (Avro through the registry, raw bytes, tombstones), readers of
 * push.dlq, push.outcomes, push.receipts and push.tokens, offline users on every partition whose
 * pushes show that the partition still moves, and the worker's /metrics.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { type Kafka, Partitioners, type Consumer, type IHeaders, type Producer } from 'kafkajs';
import { kafkaClient } from '../../common/kafka-client.ts';
import { schemaRegistryClient } from '../../common/registry-client.ts';
import { startEnvironment, type Environment } from '../../demo/environment.ts';
import { freePort } from '../../demo/ports.ts';
import { messageOf, recordings } from '../../chaos/verify.ts';
import { sleep } from '../../chaos/drain.ts';
import { registryValueSerdes, type ValueSerdes } from '../../pipeline/serdes.ts';
import { topicName, type TopicKey } from '../../pipeline/topics.ts';
import type { MessagePersisted, TokenReport } from '../../processors/model/records.ts';
import type { Vendor } from '../../processors/fan-out/vendor-port.ts';
import { stackPath } from '../../stack/paths.ts';
import type { ReceivedPush } from '../../emulators/index.ts';
import { stackEndpoints } from '../support/stack.ts';
import { createTestMysql, type TestMysql } from '../support/test-mysql.ts';

export const VENDOR_LIST: readonly Vendor[] = ['apns', 'fcm', 'hms', 'xiaomi', 'oppo', 'vivo'];

/** Platform and maker of a device whose preferred (and only) channel is the vendor. */
const DEVICE_OF: Record<Vendor, { platform: string; manufacturer: string }> = {
  apns: { platform: 'ios', manufacturer: 'apple' },
  fcm: { platform: 'android', manufacturer: 'samsung' },
  hms: { platform: 'harmony', manufacturer: 'huawei' },
  xiaomi: { platform: 'android', manufacturer: 'xiaomi' },
  oppo: { platform: 'android', manufacturer: 'oppo' },
  vivo: { platform: 'android', manufacturer: 'vivo' },
};

/** Where a produced record landed. */
export interface Produced {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  /** Wall clock just before the produce call, ms. */
  readonly at: number;
}

/** One record read back from a pipeline topic: headers as strings, value decoded (or raw for push.dlq). */
export interface SeenRecord<V> {
  readonly partition: number;
  readonly offset: string;
  readonly key: string | null;
  readonly headers: Record<string, string>;
  readonly value: V;
  readonly valueBytes: number;
}

/** A topic followed from its beginning (read_committed); `records` grows as they arrive. */
export interface Follower<V> {
  readonly records: SeenRecord<V>[];
  /** Resolves with the first record `match` accepts, or rejects after `timeoutMs`. */
  waitFor(match: (r: SeenRecord<V>) => boolean, timeoutMs: number, what: string): Promise<SeenRecord<V>>;
  close(): Promise<void>;
}

/** A device of a user with one valid token, never connected: every message of it is pushed at once. */
export interface OfflineUser {
  readonly uid: string;
  readonly deviceId: string;
  readonly vendor: Vendor;
  readonly token: string;
  readonly partition: number;
}

/** Partition of a key under the Java-compatible murmur2 partitioner every producer here and upstream uses. */
export function partitionOf(key: string, partitions: number): number {
  const pick = Partitioners.DefaultPartitioner();
  const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({
    partitionId,
    leader: 0,
    partitionErrorCode: 0,
    replicas: [0],
    isr: [0],
  }));
  return pick({ topic: 'any', partitionMetadata, message: { key, value: null } });
}

function headerStrings(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) if (v !== undefined) out[k] = Array.isArray(v) ? String(v[0]) : String(v);
  return out;
}

export class PoisonStack {
  readonly registry: SchemaRegistry;
  readonly serdes: ValueSerdes;
  private readonly kafka: Kafka;
  private producer!: Producer;
  private readonly consumers: Consumer[] = [];
  private readonly users = new Map<number, OfflineUser[]>();
  private nextConv = 0;

  private constructor(
    readonly env: Environment,
    readonly partitions: number,
    /** The worker's own database and the MySQL user it connects as. */
    readonly mysql: TestMysql & { readonly user: string },
  ) {
    const endpoints = stackEndpoints();
    this.kafka = kafkaClient(endpoints, { clientId: 'poison-suite' });
    this.registry = schemaRegistryClient(endpoints);
    this.serdes = registryValueSerdes(this.registry, env.topicPrefix);
  }

  /**
   * Creates the worker's database (migrations/mysql applied) and a MySQL user with SELECT, INSERT,
   * UPDATE and DELETE on each of its tables, then starts the environment with one worker as that
   * user and waits until it is ready.
   */
  static async start(partitions: number): Promise<PoisonStack> {
    const db = await createTestMysql('poison');
    const user = `push_poison_${randomBytes(4).toString('hex')}`;
    const password = randomBytes(12).toString('hex');
    let env: Environment | undefined;
    try {
      await db.pool.query(`CREATE USER '${user}'@'%' IDENTIFIED BY '${password}'`);
      const [tables] = await db.pool.query<Array<{ name: string } & import('mysql2').RowDataPacket>>(
        'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ?',
        [db.database],
      );
      for (const { name } of tables) await db.pool.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON \`${db.database}\`.\`${name}\` TO '${user}'@'%'`);
      const url = new URL(stackEndpoints().mysqlUrl);
      url.username = user;
      url.password = password;
      url.pathname = `/${db.database}`;
      env = await startEnvironment({ instances: 1, partitions, verbose: false, workerEnv: { PUSH_MYSQL_URL: url.toString() } });
      await env.waitReady();
      const stack = new PoisonStack(env, partitions, { ...db, user });
      stack.producer = stack.kafka.producer({ allowAutoTopicCreation: false, idempotent: true, maxInFlightRequests: 1 });
      await stack.producer.connect();
      return stack;
    } catch (error) {
      // Best-effort cleanup of a half-started stack: the start-up error is the one to report.
      await env?.close().catch(() => undefined);
      await db.pool.query(`DROP USER IF EXISTS '${user}'@'%'`).catch(() => undefined);
      await db.drop().catch(() => undefined);
      throw error;
    }
  }

  get worker() {
    return this.env.workers[0]!;
  }

  topic(key: TopicKey): string {
    return topicName(key, this.env.topicPrefix);
  }

  /** Produces one value Avro-encoded through the registry, keyed as given. */
  async send(key: TopicKey, recordKey: string, value: unknown, headers: Record<string, string> = {}): Promise<Produced> {
    const topic = this.topic(key);
    return this.sendRaw(key, recordKey, (await this.serdes(key).serialize(topic, value)) as Buffer, headers);
  }

  /** Produces bytes as they are (null: a tombstone), keyed as given. */
  async sendRaw(key: TopicKey, recordKey: string, value: Buffer | null, headers: Record<string, string> = {}): Promise<Produced> {
    const topic = this.topic(key);
    const at = Date.now();
    const [meta] = await this.producer.send({ topic, acks: -1, messages: [{ key: recordKey, value, headers }] });
    return { topic, partition: meta!.partition, offset: meta!.baseOffset!, at };
  }

  /** Follows a pipeline topic from its beginning, decoding values with the registry (push.dlq: raw bytes). */
  async follow<V>(key: TopicKey): Promise<Follower<V>> {
    const topic = this.topic(key);
    const serde = this.serdes(key);
    const records: SeenRecord<V>[] = [];
    const consumer = this.kafka.consumer({
      groupId: `${this.env.applicationId}-poison-${key}-${randomBytes(3).toString('hex')}`,
      maxWaitTimeInMs: 50,
      readUncommitted: false,
    });
    this.consumers.push(consumer);
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        const bytes = message.value;
        let value: unknown = bytes;
        // Values a reader cannot decode are kept as undefined; the cases match on decoded fields.
        if (key !== 'dlq' && bytes)
          value = await Promise.resolve()
            .then(() => serde.deserialize(topic, bytes))
            .catch(() => undefined);
        records.push({
          partition,
          offset: message.offset,
          key: message.key?.toString() ?? null,
          headers: headerStrings(message.headers),
          value: value as V,
          valueBytes: bytes?.length ?? 0,
        });
      },
    });
    return {
      records,
      async waitFor(match, timeoutMs, what) {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const found = records.find(match);
          if (found) return found;
          if (Date.now() > deadline) throw new Error(`${what}: not on ${topic} within ${timeoutMs} ms (${records.length} records read)`);
          await sleep(50);
        }
      },
      close: () => consumer.disconnect(),
    };
  }

  /**
   * Registers `perPartition` offline users on every partition, the vendors in turn, and waits until
   * the decisions have read their token reports.
   */
  async registerOfflineUsers(perPartition: number): Promise<void> {
    const reports: Array<{ key: string; value: TokenReport }> = [];
    for (let n = 0; [...this.users.values()].reduce((s, u) => s + u.length, 0) < perPartition * this.partitions; n++) {
      const uid = `${this.env.run}-u${n}`;
      const partition = partitionOf(uid, this.partitions);
      const bucket = this.users.get(partition) ?? [];
      if (bucket.length >= perPartition) continue;
      const vendor = VENDOR_LIST[bucket.length % VENDOR_LIST.length]!;
      const deviceId = `${uid}-d`;
      const user: OfflineUser = { uid, deviceId, vendor, token: this.env.emulators.token(vendor, deviceId), partition };
      bucket.push(user);
      this.users.set(partition, bucket);
      reports.push({ key: uid, value: this.tokenReport(user) });
    }
    for (const r of reports) await this.send('tokens', r.key, r.value);
    await this.waitRead('decisions', [this.topic('tokens')]);
  }

  /** A VALID client token report of the user's device, stamped a second ago. */
  tokenReport(user: OfflineUser, extra: Partial<TokenReport> = {}): TokenReport {
    return {
      uid: user.uid,
      device_id: user.deviceId,
      platform: DEVICE_OF[user.vendor].platform,
      vendor: user.vendor,
      app_id: this.env.appId,
      token: user.token,
      reported_at: Date.now() - 1000,
      state: 'VALID',
      source: 'CLIENT',
      reason: null,
      manufacturer: DEVICE_OF[user.vendor].manufacturer,
      ...extra,
    };
  }

  /** Takes a registered offline user on `partition` (with a device on `vendor` if given) no other case has used. */
  takeUser(partition: number, vendor?: Vendor): OfflineUser {
    const bucket = this.users.get(partition) ?? [];
    // Without a vendor asked for, HMS users are kept for the receipt cases (HMS posts receipts).
    let i = bucket.findIndex((u) => (vendor === undefined ? u.vendor !== 'hms' : u.vendor === vendor));
    if (i < 0 && vendor === undefined) i = bucket.findIndex(() => true);
    if (i < 0) throw new Error(`no unused offline user left on partition ${partition}${vendor ? ` with ${vendor}` : ''}`);
    return bucket.splice(i, 1)[0]!;
  }

  /** A fresh conversation id. */
  conv(label: string): string {
    return `${label}-${this.nextConv++}`;
  }

  /** A persisted message for `uid` in a fresh conversation, stamped now. */
  message(uid: string, label: string, extra: Partial<MessagePersisted> = {}): MessagePersisted {
    const conv = this.conv(label);
    return {
      msg_id: `m-${conv}`,
      conv_id: conv,
      conv_type: 'SINGLE',
      seq: 1,
      sender_uid: 'poison-sender',
      uid,
      unread_cnt: 1,
      title: 'Poison suite',
      summary: `message in ${conv}`,
      sensitive: false,
      mention: 'NONE',
      persisted_at: Date.now(),
      app_id: this.env.appId,
      ...extra,
    };
  }

  /** Sends a message to `user` and returns what was sent with where it landed. */
  async sendMessage(user: OfflineUser, label: string, extra: Partial<MessagePersisted> = {}): Promise<{ value: MessagePersisted; produced: Produced }> {
    const value = this.message(user.uid, label, extra);
    return { value, produced: await this.send('persisted', user.uid, value) };
  }

  /** Requests to `user`'s vendor about conversation `conv` (every answer), as the emulator recorded them. */
  pushesTo(user: OfflineUser, conv: string): ReceivedPush[] {
    return recordings(this.env.emulators, this.env.appId).filter((r) => r.vendor === user.vendor && r.token === user.token && messageOf(r)?.convId === conv);
  }

  /** Waits until `user`'s vendor accepted a push about `conv`; returns it (rejects after `timeoutMs`). */
  async accepted(user: OfflineUser, conv: string, timeoutMs: number): Promise<ReceivedPush> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const got = this.pushesTo(user, conv).find((r) => r.answer === 'accepted');
      if (got) return got;
      if (Date.now() > deadline)
        throw new Error(
          `no accepted ${user.vendor} push for ${conv} within ${timeoutMs} ms (answers: ${
            this.pushesTo(user, conv)
              .map((r) => r.answer)
              .join(', ') || 'none'
          })`,
        );
      await sleep(25);
    }
  }

  /**
   * Waits until the stage's consumer group committed past every record now on the given input
   * topics (full names). `markers`: the topics are written in transactions, so each partition ends
   * in a commit marker no consumer commits past.
   */
  async waitRead(stage: string, topics: string[], options: { markers?: boolean; timeoutMs?: number } = {}): Promise<void> {
    const timeoutMs = options.timeoutMs ?? 60_000;
    const slack = options.markers ? 1 : 0;
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      const groupId = `${this.env.applicationId}-${stage}`;
      const ends = await Promise.all(topics.map(async (topic) => ({ topic, ends: await admin.fetchTopicOffsets(topic) })));
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const committed = await admin.fetchOffsets({ groupId, topics: ends.map((e) => e.topic) });
        const behind = ends.some((e) =>
          e.ends.some((p) => {
            const c = committed.find((x) => x.topic === e.topic)?.partitions.find((x) => x.partition === p.partition);
            return Number(p.offset) > 0 && Number(c?.offset ?? -1) < Number(p.offset) - slack;
          }),
        );
        if (!behind) return;
        if (Date.now() > deadline) throw new Error(`${groupId} has not read ${topics.join(', ')} within ${timeoutMs} ms`);
        await sleep(100);
      }
    } finally {
      await admin.disconnect();
    }
  }

  /** The worker's /metrics: every sample of `name`, as `{labels} value` pairs. */
  async metric(name: string): Promise<Array<{ labels: string; value: number }>> {
    const text = await (await fetch(`http://127.0.0.1:${this.worker.metricsPort}/metrics`)).text();
    return text.split('\n').flatMap((line) => {
      const m = /^([a-z_]+)(\{[^}]*\})? (\S+)$/.exec(line);
      return m && m[1] === name ? [{ labels: m[2] ?? '', value: Number(m[3]) }] : [];
    });
  }

  /** Sum of every sample of a counter (0 when absent). */
  async metricTotal(name: string, labelMatch?: RegExp): Promise<number> {
    return (await this.metric(name)).filter((s) => !labelMatch || labelMatch.test(s.labels)).reduce((n, s) => n + s.value, 0);
  }

  /** How the worker process stands: exit code or signal if it ended. */
  workerExit(): string | undefined {
    const p = this.worker.process;
    return p.exitCode !== null ? `exited with ${p.exitCode}` : p.signalCode !== null ? `killed by ${p.signalCode}` : undefined;
  }

  /** The receipt credentials the worker's receiver holds for the run's app (written by demo/environment.ts). */
  receiptCredentials(): { hms: { callbackUsername: string; callbackKey: string }; sharedSecret: string } {
    const file = JSON.parse(readFileSync(this.env.workerEnv.PUSH_RECEIPTS_CONFIG!, 'utf8')) as {
      apps: Array<{ appId: string; hms: { callbackUsername: string; callbackKey: string }; xiaomi: { sharedSecret: string } }>;
    };
    const app = file.apps.find((a) => a.appId === this.env.appId)!;
    return { hms: app.hms, sharedSecret: app.xiaomi.sharedSecret };
  }

  /** Writes a file into this run's directory (mode 600) and returns its path. */
  writeRunFile(name: string, content: string): string {
    const path = join(stackPath('runs', this.env.run), name);
    writeFileSync(path, content, { mode: 0o600 });
    return path;
  }

  /** A free local port. */
  freePort(): Promise<number> {
    return freePort();
  }

  async close(): Promise<void> {
    // Best-effort: a reader or producer that fails to disconnect must not keep the workers and the database from being cleaned up.
    for (const c of this.consumers) await c.disconnect().catch(() => undefined);
    await this.producer?.disconnect().catch(() => undefined);
    await this.env.close();
    await this.mysql.pool.query(`DROP USER IF EXISTS '${this.mysql.user}'@'%'`).catch(() => undefined);
    await this.mysql.drop();
  }
}
