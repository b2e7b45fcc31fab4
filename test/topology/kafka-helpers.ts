import { after, before } from 'node:test';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type Admin, type IHeaders } from 'kafkajs';
import { kafkaClient } from '../../common/kafka-client.ts';
import { stackEndpoints, uniqueName } from '../support/stack.ts';
import { avroSerde } from '../../topology/serdes.ts';
import { wordSchema, type WordCount, type WordEvent } from './fixtures.ts';
import { createTopicsWithLeaders } from '../../topology/create-topics.ts';
import type { StreamsApp } from '../../topology/runtime.ts';

export const brokers = stackEndpoints().kafkaBrokers;
export const kafka = kafkaClient({ kafkaBrokers: brokers }, { clientId: 'topology-tests' });

/**
 * For a test file: an admin client connected before its tests, and the list of apps they start;
 * after the tests every app is closed, then the admin disconnected.
 */
export function useAdminAndApps(): { admin: Admin; apps: StreamsApp[] } {
  const admin = kafka.admin();
  const apps: StreamsApp[] = [];
  before(() => admin.connect());
  after(async () => {
    for (const app of apps) await app.close();
    await admin.disconnect();
  });
  return { admin, apps };
}

export async function createTopics(admin: Admin, topics: Array<{ topic: string; partitions: number }>): Promise<void> {
  await createTopicsWithLeaders(
    admin,
    topics.map((t) => ({ topic: t.topic, numPartitions: t.partitions, replicationFactor: 1 })),
  );
}

/** A deterministic stream of word events: `count` records over `words` distinct keys. */
export function wordStream(count: number, words: number, seed = 1): Array<{ key: string; value: WordEvent }> {
  let s = seed;
  const out: Array<{ key: string; value: WordEvent }> = [];
  for (let i = 0; i < count; i++) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    const word = `w${s % words}`;
    out.push({ key: word, value: { word, seq: i } });
  }
  return out;
}

export const wordSerde = avroSerde<WordEvent>(wordSchema);

/**
 * Produces word events (raw Avro, as the counting topology reads them), in batches. Idempotent, so
 * a retried request (a partition without a leader yet, after a broker restart) cannot duplicate input.
 */
export async function produceWords(topic: string, records: Array<{ key: string; value: WordEvent }>, client = kafka): Promise<void> {
  const batch = 2000;
  const producer = client.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    for (let i = 0; i < records.length; i += batch) {
      await producer.send({
        topic,
        acks: -1,
        messages: records.slice(i, i + batch).map((r) => ({ key: r.key, value: wordSerde.serialize(topic, r.value) as Buffer })),
      });
    }
  } finally {
    await producer.disconnect();
  }
}

export interface ReadRecord {
  key: string | null;
  value: Buffer | null;
  headers: IHeaders;
  partition: number;
  offset: string;
}

/**
 * Reads a topic with read_committed from the beginning until `until` says enough or `timeoutMs`
 * passes (then it returns what it has); keeps reading `settleMs` more to catch duplicates.
 */
export async function readTopic(
  topic: string,
  until: (records: ReadRecord[]) => boolean,
  timeoutMs: number,
  settleMs = 1500,
  client = kafka,
): Promise<ReadRecord[]> {
  const consumer = client.consumer({ groupId: uniqueName('reader'), maxWaitTimeInMs: 100, readUncommitted: false });
  const records: ReadRecord[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let done!: () => void;
  const reached = new Promise<void>((r) => (done = r));
  await consumer.run({
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages)
        records.push({ key: m.key?.toString() ?? null, value: m.value, headers: m.headers ?? {}, partition: batch.partition, offset: m.offset });
      if (until(records)) done();
    },
  });
  const timer = setTimeout(done, timeoutMs);
  await reached;
  clearTimeout(timer);
  await new Promise((r) => setTimeout(r, settleMs));
  await consumer.disconnect();
  return records;
}

export function decodeCounts(records: ReadRecord[]): WordCount[] {
  return records.map((r) => JSON.parse(r.value!.toString()) as WordCount);
}

/** Asserts-free analysis of counting output against the input: what a user would check. */
export function analyseCounts(input: Array<{ key: string; value: WordEvent }>, output: WordCount[]) {
  const perSeq = new Map<number, number>();
  for (const o of output) perSeq.set(o.seq, (perSeq.get(o.seq) ?? 0) + 1);
  const duplicated = [...perSeq.values()].filter((n) => n > 1).length;
  const missing = input.filter((r) => !perSeq.has(r.value.seq)).length;
  const truth = new Map<string, number>();
  for (const r of input) truth.set(r.key, (truth.get(r.key) ?? 0) + 1);
  const finalCounts = new Map<string, number>();
  for (const o of output) finalCounts.set(o.word, Math.max(finalCounts.get(o.word) ?? 0, o.count));
  const wrongFinal = [...truth].filter(([w, n]) => finalCounts.get(w) !== n).map(([w, n]) => `${w}: expected ${n}, got ${finalCounts.get(w)}`);
  // Each word's outputs must carry the counts 1..N exactly once (state followed its partition).
  const countsSeen = new Map<string, Set<number>>();
  let repeatedCounts = 0;
  for (const o of output) {
    const seen = countsSeen.get(o.word) ?? new Set<number>();
    if (seen.has(o.count)) repeatedCounts++;
    seen.add(o.count);
    countsSeen.set(o.word, seen);
  }
  return { outputs: output.length, duplicated, missing, wrongFinal, repeatedCounts };
}

export interface Worker {
  readonly child: ChildProcess;
  readonly events: Array<Record<string, unknown>>;
  /** Resolves when the worker printed an event matching `match`. */
  waitFor(match: (e: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<void>;
  exited: Promise<number | null>;
}

const workerScript = fileURLToPath(new URL('./counting-worker.ts', import.meta.url));

export function spawnWorker(env: Record<string, string>): Worker {
  const child = spawn(process.execPath, ['--import', 'tsx', workerScript], {
    env: { ...process.env, WORKER_BROKERS: brokers.join(','), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const events: Array<Record<string, unknown>> = [];
  const waiters: Array<{ match: (e: Record<string, unknown>) => boolean; resolve: () => void }> = [];
  let buffer = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    let nl;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      try {
        const e = JSON.parse(line) as Record<string, unknown>;
        events.push(e);
        for (const w of [...waiters]) {
          if (!w.match(e)) continue;
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve();
        }
      } catch {
        /* not an event line */
      }
    }
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    events,
    exited,
    waitFor(match, timeoutMs = 60_000) {
      if (events.some(match)) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`worker ${child.pid} did not report in time; stderr: ${stderr}`)), timeoutMs);
        waiters.push({ match, resolve: () => (clearTimeout(timer), resolve()) });
        void exited.then((code) => reject(new Error(`worker ${child.pid} exited with ${code}; stderr: ${stderr}`)));
      });
    },
  };
}
