import type { RecordHeaders } from './api.ts';
import type { Topology } from './builder.ts';
import { StreamTask, type OutputRecord, type ProcessingErrorPolicy } from './task.ts';
import type { Serde } from './serdes.ts';
import type { ChangelogEntry } from './in-memory-stores.ts';
import type { TopicRules } from './topic-rules.ts';

export interface TestDriverOptions {
  /** Initial wall-clock time in epoch ms. Default 0. */
  startWallClockMs?: number;
  /** Default `test-app`. Changelog topics are `<applicationId>-<store>-changelog`. */
  applicationId?: string;
  /** DLQ topic name. Default `dlq`; a harness for an application passes the application's DLQ topic. */
  dlqTopic?: string;
  /** Default `dlq`. */
  processingErrorPolicy?: ProcessingErrorPolicy;
  /** Commit (flush processors, drain changelogs) after every input. Default true. */
  commitEveryInput?: boolean;
  /** What the broker would refuse per topic (record size, keyless records); see TaskOptions.topicRules. Default: the runtime's defaults. */
  topicRules?: (topic: string) => TopicRules;
}

export interface PipeOptions {
  /** Record timestamp in epoch ms. Default: the driver's wall-clock time. */
  timestamp?: number;
  headers?: RecordHeaders;
}

/** An output record, decoded with the writing sink node's serdes (raw bytes for the DLQ and unknown topics). */
export interface TestRecord<K = unknown, V = unknown> {
  readonly topic: string;
  readonly key: K;
  readonly value: V;
  readonly timestamp: number;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * Runs a topology in process, without a broker, through the same task code as the Kafka runtime and
 * with the topology's real serdes. Every topic has one partition (0), so there is one task per
 * sub-topology. Records written to a topic that another sub-topology reads are fed to it after the
 * current input, as Kafka would deliver them.
 *
 * Every method that processes is async: `await driver.pipeInput(...)`.
 */
export class TopologyTestDriver {
  readonly applicationId: string;
  private readonly topology: Topology;
  private readonly tasks: StreamTask[] = [];
  private readonly outputs = new Map<string, TestRecord[]>();
  private readonly changelogs = new Map<string, ChangelogEntry[]>();
  private readonly nextOffset = new Map<string, number>();
  private readonly sinkSerdes = new Map<string, { key: Serde<unknown>; value: Serde<unknown> }>();
  private readonly sourceSerdes = new Map<string, { key: Serde<unknown>; value: Serde<unknown> }>();
  private readonly commitEveryInput: boolean;
  private wallClockMs: number;
  private ready: Promise<void>;
  private closed = false;

  constructor(topology: Topology, options: TestDriverOptions = {}) {
    this.topology = topology;
    this.applicationId = options.applicationId ?? 'test-app';
    this.wallClockMs = options.startWallClockMs ?? 0;
    this.commitEveryInput = options.commitEveryInput ?? true;
    for (const node of topology.nodes.values()) {
      if (node.kind === 'sink' && !this.sinkSerdes.has(node.topic)) this.sinkSerdes.set(node.topic, { key: node.keySerde, value: node.valueSerde });
      if (node.kind === 'source') for (const t of node.topics) this.sourceSerdes.set(t, { key: node.keySerde, value: node.valueSerde });
    }
    for (const subtopology of topology.subtopologies) {
      this.tasks.push(
        new StreamTask({
          applicationId: this.applicationId,
          topology,
          subtopology,
          partition: 0,
          clock: () => this.wallClockMs,
          dlqTopic: options.dlqTopic ?? 'dlq',
          processingErrorPolicy: options.processingErrorPolicy ?? 'dlq',
          changelogTopic: (store) => `${this.applicationId}-${store}-changelog`,
          ...(options.topicRules ? { topicRules: options.topicRules } : {}),
        }),
      );
    }
    this.ready = (async () => {
      for (const task of this.tasks) await task.init();
    })();
    // Marks it handled until the first call awaits it, which then throws the init failure.
    this.ready.catch(() => undefined);
  }

  /** Serializes key and value with the source's serdes and processes the record. */
  async pipeInput<K, V>(topic: string, key: K, value: V, options: PipeOptions = {}): Promise<void> {
    const serdes = this.sourceSerdes.get(topic);
    if (!serdes) throw new Error(`no source reads topic ${topic}`);
    const k = key === null || key === undefined ? null : await serdes.key.serialize(topic, key);
    const v = value === null || value === undefined ? null : await serdes.value.serialize(topic, value);
    await this.pipeRawInput(topic, k, v, options);
  }

  /** Processes a record given as raw bytes (for undecodable or foreign input). */
  async pipeRawInput(topic: string, key: Buffer | null, value: Buffer | null, options: PipeOptions = {}): Promise<void> {
    await this.ready;
    if (this.closed) throw new Error('driver is closed');
    const queue: OutputRecord[] = [{ topic, key, value, timestamp: options.timestamp ?? this.wallClockMs, headers: { ...options.headers } }];
    while (queue.length > 0) {
      const record = queue.shift()!;
      const task = this.taskReading(record.topic);
      if (!task) continue;
      const offset = this.nextOffset.get(record.topic) ?? 0;
      this.nextOffset.set(record.topic, offset + 1);
      await task.process({ ...record, partition: 0, offset: String(offset) });
      if (this.commitEveryInput) queue.push(...(await this.commitTask(task)));
    }
  }

  /** Moves wall-clock time forward and fires the wall-clock punctuators that became due. */
  async advanceWallClockTime(ms: number): Promise<void> {
    await this.ready;
    this.wallClockMs += ms;
    for (const task of this.tasks) await task.punctuateWallClock(this.wallClockMs);
    if (this.commitEveryInput) await this.commit();
  }

  wallClockTimeMs(): number {
    return this.wallClockMs;
  }

  /** Flushes every processor and drains outputs and changelogs (what a commit does on Kafka). */
  async commit(): Promise<void> {
    await this.ready;
    for (const task of this.tasks) {
      const forwarded = await this.commitTask(task);
      for (const record of forwarded) await this.pipeRawInput(record.topic, record.key, record.value, { timestamp: record.timestamp, headers: record.headers });
    }
  }

  /** The next unread output record of `topic`, or undefined. */
  readOutput<K = unknown, V = unknown>(topic: string): TestRecord<K, V> | undefined {
    return this.outputs.get(topic)?.shift() as TestRecord<K, V> | undefined;
  }

  /** Every unread output record of `topic`, in order; the queue is emptied. */
  readAllOutputs<K = unknown, V = unknown>(topic: string): Array<TestRecord<K, V>> {
    const all = this.outputs.get(topic) ?? [];
    this.outputs.set(topic, []);
    return all as Array<TestRecord<K, V>>;
  }

  /** The store of the task owning it (partition 0). */
  getStateStore<S>(name: string): S {
    for (const task of this.tasks) {
      const store = task.stores.get(name);
      if (store) return store as unknown as S;
    }
    throw new Error(`no store named ${name}`);
  }

  /** Changelog records written so far for a store, in order (value null = tombstone). */
  changelog(store: string): ChangelogEntry[] {
    return [...(this.changelogs.get(`${this.applicationId}-${store}-changelog`) ?? [])];
  }

  /** Closes every processor. */
  async close(): Promise<void> {
    // A failed init was thrown by the call that awaited it; the processors that did init close anyway.
    await this.ready.catch(() => undefined);
    this.closed = true;
    for (const task of this.tasks) await task.close();
  }

  private taskReading(topic: string): StreamTask | undefined {
    const sub = this.topology.subtopologyOfTopic(topic);
    return sub ? this.tasks[this.topology.subtopologies.indexOf(sub)] : undefined;
  }

  /** Commits one task; returns the records that other sub-topologies read. */
  private async commitTask(task: StreamTask): Promise<OutputRecord[]> {
    await task.flush();
    const { records, changelog } = task.drainOutputs();
    for (const c of changelog) {
      if (!this.changelogs.has(c.topic)) this.changelogs.set(c.topic, []);
      this.changelogs.get(c.topic)!.push({ key: c.key!.toString('utf8'), value: c.value });
    }
    const internal: OutputRecord[] = [];
    for (const r of records) {
      await this.capture(r);
      if (this.topology.subtopologyOfTopic(r.topic)) internal.push(r);
    }
    return internal;
  }

  private async capture(r: OutputRecord): Promise<void> {
    const serdes = this.sinkSerdes.get(r.topic);
    const key = serdes && r.key ? await serdes.key.deserialize(r.topic, r.key) : r.key;
    const value = serdes && r.value ? await serdes.value.deserialize(r.topic, r.value) : r.value;
    if (!this.outputs.has(r.topic)) this.outputs.set(r.topic, []);
    this.outputs.get(r.topic)!.push({ topic: r.topic, key, value, timestamp: r.timestamp, headers: r.headers });
  }
}
