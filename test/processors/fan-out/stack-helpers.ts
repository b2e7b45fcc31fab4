import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { kafkaClient } from '../../../common/kafka-client.ts';
import { schemaRegistryClient } from '../../../common/registry-client.ts';
import { registryValueSerdes } from '../../../pipeline/serdes.ts';
import type { PushDispatch, PushOutcome } from '../../../processors/model/records.ts';
import { stackEndpoints, uniqueName } from '../../support/stack.ts';

const endpoints = stackEndpoints();
export const kafka = kafkaClient(endpoints, { clientId: 'fanout-tests' });
export const registry = schemaRegistryClient(endpoints);

/** Produces dispatches (Confluent Avro through the registry) keyed by uid. */
export async function produceDispatches(prefix: string, dispatches: readonly PushDispatch[]): Promise<void> {
  const serde = registryValueSerdes(registry, prefix)('dispatch');
  const topic = `${prefix}push.dispatch`;
  const producer = kafka.producer();
  await producer.connect();
  for (let i = 0; i < dispatches.length; i += 500) {
    const messages = await Promise.all(dispatches.slice(i, i + 500).map(async (d) => ({ key: d.uid, value: await serde.serialize(topic, d) })));
    await producer.send({ topic, messages });
  }
  await producer.disconnect();
}

/** Follows push.outcomes (read_committed) in the background; `outcomes` grows as records arrive. */
export async function followOutcomes(
  prefix: string,
): Promise<{ outcomes: PushOutcome[]; until(done: (o: PushOutcome[]) => boolean, timeoutMs: number): Promise<void>; stop(): Promise<void> }> {
  const serde = registryValueSerdes(registry, prefix)('outcomes');
  const topic = `${prefix}push.outcomes`;
  const outcomes: PushOutcome[] = [];
  const consumer = kafka.consumer({ groupId: uniqueName('outcome-reader'), maxWaitTimeInMs: 100, readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages) if (m.value) outcomes.push((await serde.deserialize(topic, m.value)) as PushOutcome);
    },
  });
  return {
    outcomes,
    async until(done, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (!done(outcomes)) {
        if (Date.now() > deadline) throw new Error(`outcomes incomplete after ${timeoutMs} ms (${outcomes.length} read)`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    stop: () => consumer.disconnect(),
  };
}

export interface FanOutWorker {
  readonly child: ChildProcess;
  started(): Promise<void>;
  readonly exited: Promise<number | null>;
  stderr(): string;
}

const script = fileURLToPath(new URL('./fan-out-worker.ts', import.meta.url));

export function spawnFanOutWorker(env: Record<string, string>): FanOutWorker {
  const child = spawn(process.execPath, ['--import', 'tsx', script], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-4000)));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    exited,
    stderr: () => err,
    started: async () => {
      const deadline = Date.now() + 60_000;
      while (!out.includes('"event":"started"')) {
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`fan-out worker did not start: ${err}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  };
}
