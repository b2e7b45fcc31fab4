/**
 * The fan-out fused behind the decisions (PUSH_FAN_OUT_FUSED) cannot leave the input offset of a
 * dispatch in flight out of a commit: the input is the persisted message, whose decision state the
 * same commit stores. A commit waits `commitWaitMs` for the vendor calls in flight, then
 * checkpoints those still running in the changelogged `fan-out-parked` store, so one slow vendor delays the
 * commit (and every other push of the task) by that much only. Runs the real fan-out in
 * StreamTasks (the runtime's code) against the vendor emulators and MariaDB, handing the first
 * task's changelog to the second as a restore from Kafka would.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { buildFanOutTopology, FAN_OUT_NODES } from '../../../pipeline/apps/fan-out.ts';
import { rawAvroValueSerdes } from '../../../pipeline/serdes.ts';
import { TOPICS } from '../../../pipeline/topics.ts';
import { FAN_OUT_STORES } from '../../../processors/fan-out/fan-out.ts';
import mysql from 'mysql2/promise';
import { decodeCheckpoints, ENDED, IN_FLIGHT } from '../../../processors/fan-out/parked.ts';
import type { PresenceEvent, PushDispatch, PushOutcome } from '../../../processors/model/records.ts';
import type { FanOutOptions } from '../../../processors/fan-out/options.ts';
import { parseMysqlUrl } from '../../../migrations/migrate.ts';
import { stackEndpoints } from '../../support/stack.ts';
import { MysqlPushTaskLedger } from '../../../sinks/mysql/tasks.ts';
import type { SinkNode, SourceNode } from '../../../topology/builder.ts';
import type { OutputRecord, StreamTask } from '../../../topology/task.ts';
import { dispatch, fanOutStack, taskRow } from './support.ts';
import { standaloneTask } from '../../support/task.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const PARKED_CHANGELOG = `checkpoint-${FAN_OUT_STORES.parked}-changelog`;
type Changelog = ReturnType<StreamTask['drainOutputs']>['changelog'];

describe('fused fan-out: a commit checkpoints the vendor calls still in flight', () => {
  const fx = fanOutStack();

  function fusedTask(
    ledger: MysqlPushTaskLedger,
    options: Partial<FanOutOptions> = {},
  ): {
    task: StreamTask;
    send(d: PushDispatch, offset: number): Promise<unknown>;
    read(e: PresenceEvent, offset: number): Promise<unknown>;
    outcomes(records: OutputRecord[]): Promise<PushOutcome[]>;
  } {
    const topology = buildFanOutTopology({
      valueSerdes: rawAvroValueSerdes(),
      fanOut: { vendors: fx.registry, ledger, fused: true, commitWaitMs: 50, retryPollMs: 10, ...options },
    });
    const task = standaloneTask(topology, 'checkpoint', () => Date.now());
    const source = topology.nodes.get(FAN_OUT_NODES.source) as SourceNode;
    const reads = topology.nodes.get(FAN_OUT_NODES.reads) as SourceNode;
    const outcomesNode = topology.nodes.get(FAN_OUT_NODES.outcomes) as SinkNode;
    const input = async (node: SourceNode, topic: string, key: string, value: unknown, offset: number) =>
      task.process({
        topic,
        partition: 0,
        offset: String(offset),
        key: Buffer.from(key),
        value: (await node.valueSerde.serialize(topic, value)) as Buffer,
        timestamp: Date.now(),
        headers: {},
      });
    return {
      task,
      read: (e, offset) => input(reads, TOPICS.presence.name, e.uid, e, offset),
      outcomes: async (records) => {
        const out: PushOutcome[] = [];
        for (const r of records.filter((r) => r.topic === TOPICS.outcomes.name))
          out.push((await outcomesNode.valueSerde.deserialize(r.topic, r.value!)) as PushOutcome);
        return out;
      },
      send: (d, offset) => input(source, TOPICS.dispatch.name, d.uid, d, offset),
    };
  }

  /** A periodic commit: flush what has finished (checkpointing what runs), then drain; returns how long the flush took. */
  async function commit(task: StreamTask) {
    const started = Date.now();
    await task.flush({ complete: false });
    const flushMs = Date.now() - started;
    return { flushMs, ...task.drainOutputs() };
  }

  /** A task restored from what the dead one committed to its changelogs, run until its first outcome. */
  async function restartFrom(changelog: Changelog) {
    const ledger2 = new MysqlPushTaskLedger({ pool: fx.db.pool, table: fx.db.table });
    const second = fusedTask(ledger2);
    for (const c of changelog) second.task.stores.get(c.topic.slice('checkpoint-'.length, -'-changelog'.length))!.restore(c.key!.toString(), c.value);
    await second.task.init();
    const seen: PushOutcome[] = [];
    for (let i = 0; i < 100 && seen.length === 0; i++) {
      await sleep(20);
      await second.task.punctuateWallClock(Date.now());
      await second.task.flush();
      seen.push(...(await second.outcomes(second.task.drainOutputs().records)));
    }
    return { second, ledger2, seen };
  }

  test('a slow vendor delays the commit by the wait only: it carries the input offset and the checkpointed progress; the outcome and the tombstone follow', async () => {
    fx.em.reset();
    fx.em.fcm.latencyMs = 1_500;
    const ledger = new MysqlPushTaskLedger({ pool: fx.db.pool, table: fx.db.table });
    const { task, send, outcomes } = fusedTask(ledger);
    await task.init();
    const d = dispatch({ uid: 'u-slow', device: 'd1', channels: [{ vendor: 'fcm', token: fx.em.token('fcm', 'slow') }] });
    await send(d, 0);

    const first = await commit(task);
    assert.ok(first.flushMs < 1_000, `the commit waited ${first.flushMs} ms, not for the vendor`);
    assert.equal(first.offsets.get(TOPICS.dispatch.name), '0', 'the commit carries the dispatch offset');
    assert.deepEqual(await outcomes(first.records), [], 'no outcome yet');
    const checkpoints = first.changelog.filter((c) => c.topic === PARKED_CHANGELOG);
    assert.deepEqual(
      checkpoints.map((c) => c.key!.toString()),
      ['~held.0'],
      'one record for the dispatches checkpointed',
    );
    assert.deepEqual(
      decodeCheckpoints(checkpoints[0]!.value!.toString()).map((p) => [p.dispatch.task_id, p.waitingOn, p.channel, p.call, p.attempts]),
      [[d.task_id, IN_FLIGHT, 0, 1, 0]],
    );

    await sleep(1_700);
    const second = await commit(task);
    assert.deepEqual(
      (await outcomes(second.records)).map((o) => [o.status, o.vendor, o.task_id]),
      [['ACCEPTED', 'fcm', d.task_id]],
    );
    assert.deepEqual(
      second.changelog.filter((c) => c.topic === PARKED_CHANGELOG).map((c) => [c.key!.toString(), c.value]),
      [['~held.0', null]],
      'the checkpoint entry is deleted with the outcome',
    );
    assert.equal(fx.em.fcm.received.length, 1);
    assert.equal((await taskRow(fx.db.pool, fx.db.table, d.task_id))!.status, 1);
    await task.close();
    ledger.close();
  });

  test('the process dies during a checkpointed call: the restarted task claims again and finishes the push from the checkpointed progress, once', async () => {
    fx.em.reset();
    fx.em.fcm.latencyMs = 1_500;
    const ledger = new MysqlPushTaskLedger({ pool: fx.db.pool, table: fx.db.table });
    const first = fusedTask(ledger);
    await first.task.init();
    const d = dispatch({ uid: 'u-died', device: 'd1', channels: [{ vendor: 'fcm', token: fx.em.token('fcm', 'died') }] });
    await first.send(d, 0);
    const committed = await commit(first.task);
    // The process dies: its ledger writes nothing more, and the answer in flight is lost with it.
    ledger.close();
    assert.equal((await taskRow(fx.db.pool, fx.db.table, d.task_id))!.status, 0, 'claimed, pending');

    fx.em.fcm.latencyMs = 0;
    const { second, ledger2, seen } = await restartFrom(committed.changelog);
    assert.deepEqual(
      seen.map((o) => [o.status, o.vendor, o.task_id]),
      [['ACCEPTED', 'fcm', d.task_id]],
    );
    assert.equal((await taskRow(fx.db.pool, fx.db.table, d.task_id))!.status, 1);
    // The call in flight when the process died is made again (same collapse id): the vendor shows one
    // notification. Its first copy is answered 1.5 s after it was sent: wait until every request the
    // emulator took is answered (a busy machine stretches that), then count.
    for (const until = Date.now() + 10_000; fx.em.fcm.received.length < fx.em.fcm.sendRequests && Date.now() < until;) await sleep(50);
    const calls = fx.em.fcm.received.filter((r) => r.token === d.channels[0]!.token);
    assert.deepEqual(
      calls.map((r) => r.collapseId),
      [calls[0]!.collapseId, calls[0]!.collapseId],
    );
    await first.task.close();
    await second.task.close();
    ledger2.close();
  });

  test('a READ ends a parked push while its row cannot be written, and the process dies: the restarted task writes the READ and sends nothing', async () => {
    fx.em.reset();
    fx.em.fcm.script({ kind: 'server-error' });
    // The first process's ledger has a connection of its own, so its write can hang and die with it.
    const { connection, database } = parseMysqlUrl(stackEndpoints().mysqlUrl);
    const own = mysql.createPool({ ...connection, database, connectionLimit: 1 });
    const admin = await mysql.createConnection({ ...connection, database });
    const threadId = await own.getConnection().then((c) => (c.release(), c.threadId));
    const ledger = new MysqlPushTaskLedger({ pool: own, table: fx.db.table });
    // Every backoff parks (none is waited in place), for up to a minute: the push waits in the store.
    const first = fusedTask(ledger, { inlineBackoffMaxMs: 0, backoffInitialMs: 60_000, backoffMaxMs: 60_000 });
    await first.task.init();
    const d = dispatch({
      uid: 'u-read-stall',
      device: 'd1',
      conv_id: 'c-read',
      seq: 7,
      channels: [{ vendor: 'fcm', token: fx.em.token('fcm', 'read-stall') }],
    });
    await first.send(d, 0);
    const changelog: Changelog = [];
    for (let i = 0; i < 100; i++) {
      await sleep(20);
      const c = await commit(first.task);
      changelog.push(...c.changelog);
      if (c.changelog.some((r) => r.topic === PARKED_CHANGELOG && r.key!.toString() === d.task_id && r.value !== null)) break;
    }
    assert.ok(
      changelog.some((r) => r.topic === PARKED_CHANGELOG && r.key!.toString() === d.task_id),
      'the push is parked after the 503',
    );
    const callsBefore = fx.em.fcm.received.length;

    // MySQL stalls the ledger's write (a table lock), and the user reads the conversation.
    await admin.query(`LOCK TABLES \`${fx.db.table}\` WRITE`);
    await first.read({ uid: d.uid, device_id: 'd1', kind: 'READ', conv_id: 'c-read', seq: 7, at: Date.now() }, 0);
    const checkpointed = await commit(first.task);
    changelog.push(...checkpointed.changelog);
    assert.equal(checkpointed.offsets.get(TOPICS.presence.name), '0', 'the commit carries the READ');
    assert.deepEqual(await first.outcomes(checkpointed.records), [], 'no outcome before the row is written');
    const checkpoint = checkpointed.changelog.find((r) => r.topic === PARKED_CHANGELOG && r.key!.toString() === '~held.0');
    assert.deepEqual(
      decodeCheckpoints(checkpoint!.value!.toString()).map((p) => [p.dispatch.task_id, p.waitingOn, p.trail!.at(-1)!.code]),
      [[d.task_id, ENDED, 'READ']],
      'checkpointed as ended by the READ',
    );

    // The process dies with its write (its ledger stops, its connection goes): the row stays pending.
    ledger.close();
    await admin.query(`KILL ${threadId}`);
    await admin.query('UNLOCK TABLES');
    assert.equal((await taskRow(fx.db.pool, fx.db.table, d.task_id))!.status, 0, 'claimed, pending');

    // The vendor is healthy again: a claim would now send the push.
    fx.em.fcm.clearFaults();
    const { second, ledger2, seen } = await restartFrom(changelog);
    assert.deepEqual(
      seen.map((o) => [o.status, o.reason, o.task_id]),
      [['SUPPRESSED', 'read', d.task_id]],
    );
    const row = (await taskRow(fx.db.pool, fx.db.table, d.task_id))!;
    assert.deepEqual([row.status, row.fail_code], [3, 'READ'], 'the task row is failed with the READ');
    await sleep(200);
    assert.equal(fx.em.fcm.received.length, callsBefore, 'no call after the READ');
    await second.task.close();
    ledger2.close();
    await first.task.close().catch(() => undefined); // its write failed with the connection
    await admin.end();
    await own.end().catch(() => undefined);
  });
});
