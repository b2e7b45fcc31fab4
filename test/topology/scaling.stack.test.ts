import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { uniqueName } from '../support/stack.ts';
import { analyseCounts, createTopics, decodeCounts, kafka, produceWords, readTopic, spawnWorker, wordStream, type Worker } from './kafka-helpers.ts';

const RECORDS = 40_000;
const PARTITIONS = 6;
const admin = kafka.admin();
const live: Worker[] = [];

before(() => admin.connect());
after(async () => {
  for (const w of live) if (w.child.exitCode === null) w.child.kill('SIGKILL');
  await admin.disconnect();
});

const lastAssignment = (w: Worker) => (w.events.filter((e) => e.event === 'assigned').at(-1)?.tasks as string[] | undefined) ?? [];
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

test(
  'scaling 1 → 2 → 3 instances mid-stream, then one SIGTERM and one SIGKILL: nothing lost or duplicated, state follows its partitions',
  { timeout: 180_000 },
  async () => {
    const input = uniqueName('scale-in');
    const output = uniqueName('scale-out');
    const env = { WORKER_APP_ID: uniqueName('scale-app'), WORKER_INPUT: input, WORKER_OUTPUT: output, WORKER_DLQ: uniqueName('scale-dlq') };
    await createTopics(admin, [
      { topic: input, partitions: PARTITIONS },
      { topic: output, partitions: PARTITIONS },
    ]);
    const records = wordStream(RECORDS, 500, 7);
    // The second third of the input waits for the second instance to join, the last third for the
    // third: each instance is added while input still flows and has records to commit, however long
    // a start takes.
    const joined: Array<() => void> = [];
    const joins = [0, 1].map(() => new Promise<void>((resolve) => joined.push(resolve)));
    const producing = (async () => {
      for (let i = 0; i < records.length; i += 2000) {
        await joins[Math.floor((3 * i) / RECORDS) - 1];
        await produceWords(input, records.slice(i, i + 2000));
        await pause(700);
      }
    })();

    const first = spawnWorker(env);
    live.push(first);
    await first.waitFor((e) => e.event === 'committed');
    const second = spawnWorker(env);
    live.push(second);
    await second.waitFor((e) => e.event === 'assigned' && (e.tasks as string[]).length > 0);
    joined[0]!();
    await second.waitFor((e) => e.event === 'committed');
    const third = spawnWorker(env);
    live.push(third);
    await third.waitFor((e) => e.event === 'assigned' && (e.tasks as string[]).length > 0);
    joined[1]!();
    await third.waitFor((e) => e.event === 'committed');
    assert.equal(lastAssignment(third).length, 2, 'three instances share six tasks two by two');

    first.child.kill('SIGTERM');
    assert.equal(await first.exited, 0, 'a SIGTERMed instance commits, leaves the group and exits 0');
    await pause(1500);
    second.child.kill('SIGKILL');
    await second.exited;
    await producing;

    const out = await readTopic(output, (r) => r.length >= RECORDS, 120_000, 2500);
    assert.deepEqual(lastAssignment(third), ['0_0', '0_1', '0_2', '0_3', '0_4', '0_5'], 'the survivor ends up owning every task');
    third.child.kill('SIGTERM');
    assert.equal(await third.exited, 0);
    assert.deepEqual(analyseCounts(records, decodeCounts(out)), { outputs: RECORDS, duplicated: 0, missing: 0, wrongFinal: [], repeatedCounts: 0 });
  },
);
