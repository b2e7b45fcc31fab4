/**
 * A broker restart under exactly-once processing. The stack's broker is shared by every test, so
 * this file starts a second broker of its own (own ports and data under .stack/kafka-restart-test),
 * restarts it twice while three worker processes count, and removes it afterwards.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from '../../demo/ports.ts';
import { rmSync } from 'node:fs';
import { type Kafka } from 'kafkajs';
import { kafkaClient } from '../../common/kafka-client.ts';
import { kafkaService, restartKafka, type KafkaInstance } from '../../stack/kafka.ts';
import { stackPath } from '../../stack/paths.ts';
import { uniqueName } from '../support/stack.ts';
import { analyseCounts, createTopics, decodeCounts, produceWords, readTopic, spawnWorker, wordStream, type Worker } from './kafka-helpers.ts';

const RECORDS = 36_000;
const PARTITIONS = 12;
const TASKS = Array.from({ length: PARTITIONS }, (_, p) => `0_${p}`).sort();
const live: Worker[] = [];

let broker: KafkaInstance;
let client: Kafka;

before(async () => {
  broker = { name: 'kafka-restart-test', port: await freePort(), controllerPort: await freePort() };
  await kafkaService(broker).down();
  rmSync(stackPath(broker.name), { recursive: true, force: true });
  await kafkaService(broker).up();
  client = kafkaClient({ kafkaBrokers: [`127.0.0.1:${broker.port}`] }, { clientId: 'broker-restart-test', retry: { retries: 20, maxRetryTime: 5000 } });
});

after(async () => {
  for (const w of live) if (w.child.exitCode === null) w.child.kill('SIGKILL');
  await kafkaService(broker).down();
  rmSync(stackPath(broker.name), { recursive: true, force: true });
});

const lastAssignment = (w: Worker) => (w.events.filter((e) => e.event === 'assigned').at(-1)?.tasks as string[] | undefined) ?? [];
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Each instance's tasks, once every instance owns some and between them they own every task once,
 * or as they are after `timeoutMs`. An instance that joins late (a slow start, or still backing off
 * from a restart) makes the group rebalance once more: the assignments settle within a rebalance or two.
 */
async function settledShares(workers: readonly Worker[], timeoutMs: number): Promise<string[][]> {
  const shares = () => workers.map(lastAssignment);
  const settled = (s: string[][]) => s.every((tasks) => tasks.length > 0) && JSON.stringify(s.flat().sort()) === JSON.stringify(TASKS);
  for (const deadline = Date.now() + timeoutMs; !settled(shares()) && Date.now() < deadline;) await pause(500);
  return shares();
}

test(
  'two broker restarts (graceful, then a crash) while three instances count under exactly-once: every partition resumes, nothing lost or duplicated',
  { timeout: 300_000 },
  async () => {
    const input = uniqueName('restart-in');
    const output = uniqueName('restart-out');
    const admin = client.admin();
    await admin.connect();
    await createTopics(admin, [
      { topic: input, partitions: PARTITIONS },
      { topic: output, partitions: PARTITIONS },
    ]);
    await admin.disconnect();
    const env = {
      WORKER_BROKERS: `127.0.0.1:${broker.port}`,
      WORKER_APP_ID: uniqueName('restart-app'),
      WORKER_INPUT: input,
      WORKER_OUTPUT: output,
      WORKER_DLQ: uniqueName('restart-dlq'),
    };
    const records = wordStream(RECORDS, 400, 5);

    const workers = [spawnWorker(env), spawnWorker(env), spawnWorker(env)];
    live.push(...workers);
    // Input flows once the three share the tasks: an instance that joined after the others had
    // counted the first third would have nothing to commit before the restart.
    await Promise.all(workers.map((w) => w.waitFor((e) => e.event === 'started', 120_000)));
    const shares = await settledShares(workers, 60_000);
    assert.ok(
      shares.every((tasks) => tasks.length > 0),
      `the three instances share the tasks before input flows: ${JSON.stringify(shares)}`,
    );
    // Input flows between the restarts, never while the broker is down (a producer retry then
    // cannot duplicate input, so every output maps to exactly one input). The first restart is
    // graceful, the second a crash with transactions open.
    const produce = async (from: number, to: number) => {
      for (let i = from; i < to; i += 2000) {
        await produceWords(input, records.slice(i, i + 2000), client);
        await pause(200);
      }
    };
    await produce(0, 12_000);
    await Promise.all(workers.map((w) => w.waitFor((e) => e.event === 'committed', 90_000)));
    const downMs = [(await restartKafka(broker, 'SIGTERM')).downMs];
    await produce(12_000, 24_000);
    downMs.push((await restartKafka(broker, 'SIGKILL')).downMs);
    await produce(24_000, RECORDS);

    const out = await readTopic(output, (r) => r.length >= RECORDS, 150_000, 2500, client);
    assert.deepEqual(
      analyseCounts(records, decodeCounts(out)),
      { outputs: RECORDS, duplicated: 0, missing: 0, wrongFinal: [], repeatedCounts: 0 },
      `broker back after ${downMs.join(' and ')} ms`,
    );
    assert.deepEqual((await settledShares(workers, 60_000)).flat().sort(), TASKS, 'the instances own every task between them, each once');
    for (const w of workers) {
      assert.equal(w.child.exitCode, null, 'no instance exited on its own');
      w.child.kill('SIGTERM');
      assert.equal(await w.exited, 0, 'each instance shuts down cleanly on SIGTERM');
    }
  },
);
