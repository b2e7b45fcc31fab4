/**
 * The faults the chaos run injects from outside the pipeline: killing and restarting worker
 * processes, cutting a store off through a TCP forwarder the run controls (MySQL, ClickHouse), and
 * producing malformed inputs. The broker restart is stack/kafka.ts' restartKafka.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { kafkaClient } from '../common/kafka-client.ts';
import { schemaRegistryClient } from '../common/registry-client.ts';
import { readEndpoints } from '../common/endpoints.ts';
import { registryValueSerdes } from '../pipeline/serdes.ts';
import { topicName } from '../pipeline/topics.ts';
import type { Environment } from '../demo/environment.ts';

/** Stops a worker with `signal` and waits until its process has exited. */
export async function stopWorker(env: Environment, index: number, signal: 'SIGKILL' | 'SIGTERM'): Promise<void> {
  const worker = env.workers.find((w) => w.index === index);
  if (!worker || worker.process.exitCode !== null || worker.process.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => worker.process.once('exit', () => resolve()));
  worker.process.kill(signal);
  const timer = setTimeout(() => worker.process.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(timer);
}

/**
 * A TCP forwarder in front of a store: workers are pointed at `port`; `cut()` closes the listener
 * and drops every open connection (the store looks down), `restore()` listens again.
 */
export interface StoreForwarder {
  readonly port: number;
  readonly up: () => boolean;
  cut(): Promise<void>;
  restore(): Promise<void>;
}

export async function startStoreForwarder(port: number, target: { host: string; port: number }): Promise<StoreForwarder> {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  const listen = async () => {
    const s = createServer((client) => {
      const upstream = connect(target.port, target.host);
      sockets.add(client).add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => resolve());
    });
    server = s;
  };
  await listen();
  return {
    port,
    up: () => server !== undefined,
    async cut() {
      const s = server;
      server = undefined;
      for (const socket of sockets) socket.destroy();
      sockets.clear();
      if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
    },
    async restore() {
      if (!server) await listen();
    },
  };
}

export type MalformedKind = 'garbage' | 'unknown-schema-id' | 'wrong-record' | 'truncated' | 'bad-values';

/** Kinds the decoder must reject to the DLQ (the share of each in a batch). */
export const MALFORMED_MIX: ReadonlyArray<[MalformedKind, number]> = [
  ['garbage', 0.4],
  ['unknown-schema-id', 0.15],
  ['wrong-record', 0.2],
  ['truncated', 0.2],
  ['bad-values', 0.05],
];

export interface MalformedProducer {
  /** Sends `count` malformed records to im.message.persisted; returns how many of each kind. */
  send(count: number): Promise<Record<MalformedKind, number>>;
  close(): Promise<void>;
}

/**
 * Malformed inputs on the persisted-message topic: garbage bytes, unknown schema ids, a record of
 * another topic's schema, truncated Avro, and well-formed records whose values break the contract
 * (negative seq, uid not the key, empty ids).
 */
export async function malformedProducer(topicPrefix: string, appId: string): Promise<MalformedProducer> {
  const endpoints = readEndpoints();
  const serdes = registryValueSerdes(schemaRegistryClient(endpoints), topicPrefix);
  const persistedTopic = topicName('persisted', topicPrefix);
  const producer = kafkaClient(endpoints, {
    clientId: 'chaos-malformed',
    retry: { retries: 30, maxRetryTime: 5000 },
    // Idempotent, as an IM service's producer must be: a batch retried after a broker loss is
    // written once, so the malformed inputs counted here are exactly those on the topic.
  }).producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  let n = 0;
  const validMessage = (i: number) => ({
    msg_id: `bad-${i}`,
    conv_id: `bad-conv-${i}`,
    conv_type: 'SINGLE',
    seq: 1,
    sender_uid: 'bad-sender',
    uid: `bad-${i}`,
    unread_cnt: 1,
    title: 't',
    summary: 's',
    sensitive: false,
    mention: 'NONE',
    persisted_at: Date.now(),
    app_id: appId,
  });
  const one = async (kind: MalformedKind, i: number): Promise<Buffer> => {
    switch (kind) {
      case 'garbage': {
        const b = randomBytes(1 + (i % 200));
        if (b[0] === 0) b[0] = 1;
        return b;
      }
      case 'unknown-schema-id': {
        const b = Buffer.concat([Buffer.alloc(5), randomBytes(20)]);
        b.writeInt32BE(1_900_000_000 + (i % 3), 1);
        return b;
      }
      case 'wrong-record':
        return serdes('receipts').serialize(topicName('receipts', topicPrefix), {
          event_id: `bad-${i}`,
          vendor: 'apns',
          vendor_message_id: `bad-${i}`,
          status: 'DELIVERED',
          code: '0',
          at: Date.now(),
          received_at: Date.now(),
          matched: false,
          task_id: null,
          uid: null,
          device_id: null,
          app_id: null,
          platform: null,
          conv_id: null,
          seq: null,
        });
      case 'truncated': {
        const full = await serdes('persisted').serialize(persistedTopic, validMessage(i));
        return full.subarray(0, Math.max(6, Math.floor(full.length / 2)));
      }
      case 'bad-values':
        return serdes('persisted').serialize(persistedTopic, { ...validMessage(i), seq: -1 - (i % 5), msg_id: '', uid: i % 2 === 0 ? '' : `other-${i}` });
    }
  };
  return {
    async send(count) {
      const counts = Object.fromEntries(MALFORMED_MIX.map(([k]) => [k, 0])) as Record<MalformedKind, number>;
      const messages: Array<{ key: string; value: Buffer }> = [];
      for (let i = 0; i < count; i++) {
        const x = (n * 0.618033988749895) % 1;
        let pick = x;
        const kind = MALFORMED_MIX.find(([, share]) => (pick -= share) < 0)?.[0] ?? 'garbage';
        counts[kind]++;
        messages.push({ key: `bad-${n}`, value: await one(kind, n) });
        n++;
      }
      for (let i = 0; i < messages.length; i += 1000) await producer.send({ topic: persistedTopic, messages: messages.slice(i, i + 1000), acks: -1 });
      return counts;
    },
    close: () => producer.disconnect(),
  };
}
