import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { clickhouseEventSink } from '../../../sinks/clickhouse/processor.ts';
import { rowFromOutcome, type PushOutcomeRecord } from '../../../sinks/clickhouse/rows.ts';
import { PushEventWriter } from '../../../sinks/clickhouse/writer.ts';
import { TopologyBuilder } from '../../../topology/builder.ts';
import { avroSerde, stringSerde } from '../../../topology/serdes.ts';
import { TopologyTestDriver } from '../../../topology/test-driver.ts';
import { buildWorkload } from './fixtures.ts';
import { freePort } from '../../../demo/ports.ts';
import { startForwarder } from './forwarder.ts';
import { createTestDatabase, type TestDatabase } from './support.ts';

/**
 * ClickHouse unavailable: the writer points at a port where nothing listens; later a plain TCP
 * forwarder to the stack's real ClickHouse starts listening on that port. The shared ClickHouse
 * server itself is never stopped.
 */
const settle = (promise: Promise<unknown>) => {
  const state = { done: false, error: undefined as unknown };
  promise.then(
    () => (state.done = true),
    (error: unknown) => {
      state.done = true;
      state.error = error;
    },
  );
  return state;
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('ClickHouse writer while ClickHouse is unavailable', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase('outage');
  });
  after(async () => {
    await db?.drop();
  });

  async function storedEvents(prefix: string): Promise<number> {
    const rs = await db.client.query({
      query: `SELECT uniqExact(event_id) AS n FROM push_events WHERE startsWith(event_id, '${prefix}')`,
      format: 'JSONEachRow',
    });
    const [{ n }] = (await rs.json<{ n: string }>()) as [{ n: string }];
    return Number(n);
  }

  test('flush blocks and retries while nothing listens, then stores every row once the server is reachable', async () => {
    const port = await freePort();
    const failures: string[] = [];
    const writer = new PushEventWriter({
      connection: { ...db.connection, url: `http://127.0.0.1:${port}` },
      maxBatchRows: 100,
      retryInitialDelayMs: 50,
      retryMaxDelayMs: 300,
      listener: { insertFailed: (error) => failures.push(error.code) },
    });
    const outcomes = buildWorkload(300, 11).outcomes.map((o) => ({ ...o, event_id: `w-${o.event_id}` }));
    for (const o of outcomes) writer.add(rowFromOutcome(o));
    const flushed = settle(writer.flush());

    await sleep(1500);
    assert.equal(flushed.done, false, 'flush must not resolve while ClickHouse is unreachable');
    assert.ok(failures.length >= 3, `retried with backoff (${failures.length} attempts)`);
    assert.ok(failures.every((code) => code === 'CLICKHOUSE_UNAVAILABLE'));
    assert.equal(await storedEvents('w-'), 0);

    // More rows arrive meanwhile; a second flush queues behind the first.
    const late = buildWorkload(50, 12).outcomes.map((o) => ({ ...o, event_id: `w-late-${o.event_id}` }));
    for (const o of late) writer.add(rowFromOutcome(o));
    const secondFlush = settle(writer.flush());

    const forwarder = await startForwarder(port, new URL(db.connection.url));
    try {
      while (!secondFlush.done) await sleep(50);
      assert.equal(flushed.error, undefined);
      assert.equal(secondFlush.error, undefined);
      assert.equal(await storedEvents('w-'), outcomes.length + late.length, 'no row lost');
      assert.equal(writer.bufferedRows, 0);
    } finally {
      await writer.close();
      await forwarder.close();
    }
  });

  test('as a processor: the runtime commit (flush) does not complete until the rows are stored', async () => {
    const port = await freePort();
    const writer = new PushEventWriter({ connection: { ...db.connection, url: `http://127.0.0.1:${port}` }, retryInitialDelayMs: 50, retryMaxDelayMs: 200 });
    const schema = JSON.parse(readFileSync(new URL('../../../schemas/push-outcome.avsc', import.meta.url), 'utf8')) as object;
    const topology = new TopologyBuilder()
      .addSource('outcomes', { topics: ['push.outcomes'], keySerde: stringSerde, valueSerde: avroSerde<PushOutcomeRecord>(schema) })
      .addProcessor('clickhouse-sink', clickhouseEventSink(writer), 'outcomes')
      .build();
    const driver = new TopologyTestDriver(topology);
    const outcomes = buildWorkload(20, 13).outcomes.map((o) => ({ ...o, event_id: `p-${o.event_id}` }));
    try {
      const piped = settle(
        (async () => {
          for (const o of outcomes) await driver.pipeInput('push.outcomes', o.uid, o);
        })(),
      );
      await sleep(1000);
      assert.equal(piped.done, false, 'the commit after the first record is still waiting on ClickHouse');
      assert.equal(await storedEvents('p-'), 0);

      const forwarder = await startForwarder(port, new URL(db.connection.url));
      try {
        while (!piped.done) await sleep(50);
        assert.equal(piped.error, undefined);
        assert.equal(await storedEvents('p-'), outcomes.length);
      } finally {
        await forwarder.close();
      }
    } finally {
      await driver.close();
      await writer.close();
    }
  });
});
