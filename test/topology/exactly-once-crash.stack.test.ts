import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { uniqueName } from '../support/stack.ts';
import { analyseCounts, createTopics, decodeCounts, kafka, produceWords, readTopic, spawnWorker, wordStream, type Worker } from './kafka-helpers.ts';

const RECORDS = 50_000;
const KILLS = 3;
const admin = kafka.admin();
const live: Worker[] = [];

before(() => admin.connect());
after(async () => {
  for (const w of live) if (w.child.exitCode === null) w.child.kill('SIGKILL');
  await admin.disconnect();
});

const committedInputs = (w: Worker) => w.events.filter((e) => e.event === 'committed').reduce((n, e) => n + (e.inputRecords as number), 0);

test(
  `exactly-once counting survives ${KILLS} SIGKILLs of its worker: one output per input, final counts equal ground truth`,
  { timeout: 180_000 },
  async () => {
    const input = uniqueName('eos-in');
    const output = uniqueName('eos-out');
    const env = {
      WORKER_APP_ID: uniqueName('eos-app'),
      WORKER_INPUT: input,
      WORKER_OUTPUT: output,
      WORKER_DLQ: uniqueName('eos-dlq'),
      WORKER_GUARANTEE: 'exactly_once',
    };
    await createTopics(admin, [
      { topic: input, partitions: 4 },
      { topic: output, partitions: 4 },
    ]);
    const records = wordStream(RECORDS, 300, 42);

    // Input arrives over ~25 s while the worker is killed and restarted.
    const producing = (async () => {
      for (let i = 0; i < records.length; i += 2000) {
        await produceWords(input, records.slice(i, i + 2000));
        await new Promise((r) => setTimeout(r, 900));
      }
    })();

    const killedAfter: number[] = [];
    for (let kill = 0; kill < KILLS; kill++) {
      const worker = spawnWorker(env);
      live.push(worker);
      await worker.waitFor((e) => e.event === 'committed', 90_000);
      await new Promise((r) => setTimeout(r, 300 + Math.random() * 2000));
      worker.child.kill('SIGKILL');
      await worker.exited;
      killedAfter.push(committedInputs(worker));
    }
    await producing;
    const survivor = spawnWorker(env);
    live.push(survivor);
    const out = await readTopic(output, (r) => r.length >= RECORDS, 120_000, 2500);
    survivor.child.kill('SIGTERM');
    assert.equal(await survivor.exited, 0, 'the last worker shuts down cleanly on SIGTERM');

    const report = analyseCounts(records, decodeCounts(out));
    assert.ok(
      killedAfter.every((n) => n > 0),
      `every killed worker had committed work (${killedAfter.join(', ')})`,
    );
    assert.deepEqual(report, { outputs: RECORDS, duplicated: 0, missing: 0, wrongFinal: [], repeatedCounts: 0 });
  },
);
