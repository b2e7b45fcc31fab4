/**
 * One MySQL shard down for 30 s (docs/data.md "Shards"): four shards as four
 * databases on the stack's MariaDB, shard 2 reached through a TCP forwarder the test cuts (the
 * machine's MariaDB keeps running). A fan-out worker process pushes to 40 users across the shards.
 * While shard 2 is cut, the users of the other three keep getting their pushes at the vendor
 * emulator, and their outcomes are committed; shard 2's users get none (their dispatches wait parked). Once it is back, each of their pushes arrives, exactly once,
 * and every task row is on its shard.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { RowDataPacket } from 'mysql2/promise';
import { startStoreForwarder, type StoreForwarder } from '../../../chaos/faults.ts';
import { freePort } from '../../../demo/ports.ts';
import type { PushDispatch } from '../../../processors/model/records.ts';
import { shardOf } from '../../../sinks/mysql/shards.ts';
import { startEmulators, type StartedEmulators } from '../../../emulators/index.ts';
import { uniqueName } from '../../support/stack.ts';
import { followOutcomes, produceDispatches, type FanOutWorker } from '../../processors/fan-out/stack-helpers.ts';
import { createFanOutTopics, shardDatabases, startShardedFanOut, urlOf, type ShardDatabases } from './shard-stack.ts';
import { dispatch } from '../../processors/fan-out/support.ts';
import { deleteRunTopics } from '../../support/run-topics.ts';

const SHARDS = 4;
const DOWN = 2;
const OUTAGE_MS = 30_000;
const USERS = Array.from({ length: 40 }, (_, i) => `u-${String(i).padStart(3, '0')}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('one MySQL shard down for 30 s', () => {
  let em: StartedEmulators;
  let db: ShardDatabases;
  let proxy: StoreForwarder;
  let prefix: string;
  let worker: FanOutWorker | undefined;
  let follower: Awaited<ReturnType<typeof followOutcomes>>;

  before(async () => {
    em = await startEmulators();
    db = await shardDatabases('shard_down', SHARDS);
    const target = new URL(db.urls[DOWN]!);
    proxy = await startStoreForwarder(await freePort(), { host: target.hostname, port: Number(target.port || 3306) });
    prefix = `${uniqueName('shard-down')}.`;
    await createFanOutTopics(prefix, 3);
    follower = await followOutcomes(prefix);
    // The worker reaches shard 2 through the forwarder only.
    worker = await startShardedFanOut(
      em,
      prefix,
      db.urls.map((url, i) => (i === DOWN ? urlOf(db.names[i]!, `127.0.0.1:${proxy.port}`) : url)),
    );
  });
  after(async () => {
    if (worker && worker.child.exitCode === null) worker.child.kill('SIGKILL');
    await proxy?.cut();
    await follower?.stop();
    await em?.close();
    await db?.drop();
    if (prefix) await deleteRunTopics(prefix);
  });

  const round = (name: string): PushDispatch[] =>
    USERS.map((uid) => dispatch({ uid, device: `d-${uid}`, conv_id: `conv-${name}`, channels: [{ vendor: 'fcm', token: em.token('fcm', `${uid}-${name}`) }] }));
  const tokensOf = (batch: readonly PushDispatch[]) => batch.map((d) => d.channels[0]!.token);
  const arrived = () => new Map(em.fcm.accepted().reduce((m, p) => m.set(p.token, (m.get(p.token) ?? 0) + 1), new Map<string, number>()));

  async function until(what: string, done: () => boolean, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
      await sleep(100);
    }
  }

  test('the other shards’ users keep getting pushes; the down shard’s are delayed, then delivered exactly once', async () => {
    const onDown = (d: PushDispatch) => shardOf(d.uid, SHARDS) === DOWN;
    assert.ok(USERS.filter((u) => shardOf(u, SHARDS) === DOWN).length >= 4, 'the down shard has users');

    // Everything works before the outage.
    const warm = round('warm');
    await produceDispatches(prefix, warm);
    await follower.until((o) => warm.every((d) => o.some((x) => x.task_id === d.task_id && x.status === 'ACCEPTED')), 90_000);

    await proxy.cut();
    const cutAt = Date.now();
    const during: PushDispatch[][] = [];
    for (const name of ['down-0s', 'down-10s', 'down-20s']) {
      const batch = round(name);
      during.push(batch);
      await produceDispatches(prefix, batch);
      // Every user on the other shards gets this round while shard 2 is still down.
      const others = batch.filter((d) => !onDown(d));
      await until(`${name}: the other shards' pushes`, () => tokensOf(others).every((t) => arrived().has(t)), cutAt + OUTAGE_MS - 1_000 - Date.now());
      // And their ACCEPTED outcomes are committed (the accounting does not wait for shard 2 either).
      await until(
        `${name}: the other shards' outcomes`,
        () => others.every((d) => follower.outcomes.some((x) => x.task_id === d.task_id && x.status === 'ACCEPTED')),
        cutAt + OUTAGE_MS - 500 - Date.now(),
      );
      await sleep(Math.max(0, cutAt + (during.length * OUTAGE_MS) / 3 - Date.now()));
    }
    const all = during.flat();
    const downTokens = tokensOf(all.filter(onDown));
    assert.equal(
      downTokens.filter((t) => arrived().has(t)).length,
      0,
      'no push of a down-shard user is sent while its shard is down (its claim cannot be written)',
    );
    assert.ok(Date.now() - cutAt >= OUTAGE_MS - 100 && proxy.up() === false, 'the outage lasted 30 s');

    await proxy.restore();
    await until('the down shard’s pushes after it is back', () => downTokens.every((t) => arrived().has(t)), 60_000);
    await follower.until((o) => all.every((d) => o.some((x) => x.task_id === d.task_id && x.status === 'ACCEPTED')), 60_000);
    await sleep(2_000); // nothing more arrives

    // Exactly once each at the vendor: no loss, no duplicate.
    const counts = arrived();
    for (const t of [...tokensOf(warm), ...tokensOf(all)]) assert.equal(counts.get(t), 1, 'each push reaches the vendor once');
    assert.equal(em.fcm.accepted().length, warm.length + all.length);
    // Each task row on its user's shard, submitted, once.
    for (let i = 0; i < SHARDS; i++) {
      const [rows] = await db.pools.shard(i).query<RowDataPacket[]>(`SELECT task_id, status, CRC32(uid) % ${SHARDS} AS s FROM im_push_task`);
      const expected = [...warm, ...all].filter((d) => shardOf(d.uid, SHARDS) === i).map((d) => d.task_id);
      assert.deepEqual(rows.map((r) => String(r.task_id)).sort(), expected.sort(), `shard ${i}'s rows`);
      for (const r of rows) assert.deepEqual([Number(r.s), r.status], [i, 1]);
    }
  });
});
