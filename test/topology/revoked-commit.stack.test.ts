import { test } from 'node:test';
import assert from 'node:assert/strict';
import { uniqueName } from '../support/stack.ts';
import { StreamsApp } from '../../topology/runtime.ts';
import { TopologyBuilder, type Topology } from '../../topology/builder.ts';
import { stringSerde } from '../../topology/serdes.ts';
import { createLogger } from '../../common/log.ts';
import { brokers, createTopics, kafka, useAdminAndApps } from './kafka-helpers.ts';

const { admin, apps } = useAdminAndApps();

/**
 * A terminal processor shared by an instance's tasks whose flush, run before every commit, waits while
 * the gate is shut: the ClickHouse sink waiting out a store outage.
 */
class FlushGate {
  processed = 0;
  waiting = 0;
  private opened: Promise<void> = Promise.resolve();
  private release: () => void = () => undefined;

  shut(): void {
    this.opened = new Promise((resolve) => (this.release = resolve));
  }

  open(): void {
    this.release();
  }

  topology(input: string): Topology {
    return new TopologyBuilder()
      .addSource('in', { topics: [input], keySerde: stringSerde, valueSerde: stringSerde })
      .addProcessor(
        'gated-sink',
        () => ({
          process: () => {
            this.processed++;
          },
          flush: async () => {
            this.waiting++;
            await this.opened;
            this.waiting--;
          },
        }),
        'in',
      )
      .build();
  }
}

async function produce(topic: string, partition: number, count: number): Promise<void> {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  await producer.send({ topic, acks: -1, messages: Array.from({ length: count }, (_, i) => ({ key: `k${i}`, value: `v${i}`, partition })) });
  await producer.disconnect();
}

async function committed(groupId: string, topic: string): Promise<Map<number, string>> {
  const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] });
  return new Map(offsets!.partitions.map((p) => [p.partition, p.offset]));
}

async function waitFor(what: string, condition: () => Promise<boolean> | boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test("at-least-once: a commit that outlives its task's revocation does not move the new owner's offset back", { timeout: 120_000 }, async () => {
  const input = uniqueName('revoked-in');
  const applicationId = uniqueName('revoked-app');
  await createTopics(admin, [{ topic: input, partitions: 2 }]);
  const start = async (gate: FlushGate) => {
    const app = new StreamsApp({
      applicationId,
      topology: gate.topology(input),
      brokers,
      dlqTopic: uniqueName('revoked-dlq'),
      processingGuarantee: 'at_least_once',
      commitIntervalMs: 100,
      logger: createLogger({}, 'error'),
    });
    apps.push(app);
    await app.start();
    return app;
  };

  const gateA = new FlushGate();
  const appA = await start(gateA);
  await produce(input, 0, 2);
  await produce(input, 1, 2);
  await waitFor('instance A to commit both partitions at 2', async () => {
    const c = await committed(applicationId, input);
    return c.get(0) === '2' && c.get(1) === '2';
  });

  // A processes 3 more records per partition; the commits that follow wait in their flush.
  gateA.shut();
  await produce(input, 0, 3);
  await produce(input, 1, 3);
  await waitFor('instance A to process the new records and wait in both flushes', () => gateA.processed === 10 && gateA.waiting === 2);

  // B joins and takes one partition over, reads it from offset 2 and commits beyond A's pending offset.
  const gateB = new FlushGate();
  const appB = await start(gateB);
  await waitFor('the partitions to be shared', () => appA.assignedTasks().length === 1 && appB.assignedTasks().length === 1, 60_000);
  const moved = Number(appB.assignedTasks()[0]!.split('_')[1]);
  const kept = 1 - moved;
  await produce(input, moved, 2);
  await waitFor('instance B to commit the moved partition at 7', async () => (await committed(applicationId, input)).get(moved) === '7');

  // A's flushes finish: its kept partition commits at 5; its revoked task's offsets (5) must not be committed.
  gateA.open();
  await waitFor('instance A to commit its kept partition at 5', async () => (await committed(applicationId, input)).get(kept) === '5');
  await new Promise((r) => setTimeout(r, 1000));
  const final = await committed(applicationId, input);
  assert.equal(final.get(moved), '7', "the moved partition keeps its new owner's committed offset");
  assert.equal(final.get(kept), '5');
  assert.equal(gateB.processed, 5, 'instance B read the moved partition from its last commit (2) to its end (7)');
});
