/**
 * The task row as the system of record (docs/data.md, "im_push_task"): after a push, a support
 * engineer reading the row sees what the device was sent — the unread count, the title and summary
 * exactly as the vendor got them (the generic text for a private-mode user), the collapse id and
 * the merge kind. Messages go through the real policy (DecisionsHarness) into the fan-out, the
 * vendor emulators and MariaDB.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createVendorRegistry, type VendorRegistry } from '../../../sinks/vendors/registry.ts';
import { decodeTaskPayload, TASK_PAYLOAD_MAX_BYTES } from '../../../sinks/mysql/tasks.ts';
import { graphemes } from '../../../common/graphemes.ts';
import { startEmulators, type StartedEmulators } from '../../../emulators/index.ts';
import type { PushDispatch } from '../../../processors/model/records.ts';
import { DecisionsHarness, APP } from '../../processors/harness.ts';
import { dispatch, fanOutDriver, taskRow, taskTable } from '../../processors/fan-out/support.ts';

describe('im_push_task keeps what each device was sent', () => {
  let em: StartedEmulators;
  let registry: VendorRegistry;
  let db: Awaited<ReturnType<typeof taskTable>>;
  let fo: ReturnType<typeof fanOutDriver>;
  let policy: DecisionsHarness;

  before(async () => {
    em = await startEmulators({ apps: [APP, 'app-1'] });
    registry = createVendorRegistry(em.appsConfig);
    db = await taskTable();
  });
  after(async () => {
    await fo?.close();
    await registry.close();
    await em.close();
    await db.close();
  });
  beforeEach(async () => {
    em.reset();
    await fo?.close();
    fo = fanOutDriver(db.pool, db.table, { vendors: registry, backoffInitialMs: 5, backoffMaxMs: 50, defaultThrottleMs: 100 });
  });

  /** The policy's dispatches for one message to a user with one device per vendor given. */
  async function decide(
    uid: string,
    vendors: ReadonlyArray<'apns' | 'fcm'>,
    settings: { private_mode: boolean },
    message: { title: string; summary: string; unread_cnt: number },
  ) {
    policy = DecisionsHarness.create();
    try {
      for (const vendor of vendors) await policy.token(uid, `${uid}-${vendor}`, vendor, { token: em.token(vendor, `${uid}-${vendor}`) });
      await policy.settings(uid, settings);
      await policy.advanceTo(1_000);
      await policy.message(uid, 'c1', message);
      return policy.dispatches();
    } finally {
      await policy.close();
    }
  }

  async function rowOf(d: PushDispatch) {
    const row = await taskRow(db.pool, db.table, d.task_id);
    assert.ok(row, `a row for ${d.device_id}`);
    return row as Record<string, unknown>;
  }

  test('a push: the row has the unread count, the title and summary exactly as sent, the collapse id and the merge kind', async () => {
    const dispatches = await decide('u-row', ['apns', 'fcm'], { private_mode: false }, { title: 'Alice 👩‍👩‍👧', summary: 'See you at 7? 🇫🇷', unread_cnt: 7 });
    assert.equal(dispatches.length, 2);
    for (const d of dispatches) await fo.send(d);
    for (const vendor of ['apns', 'fcm'] as const) {
      const d = dispatches.find((x) => x.device_id === `u-row-${vendor}`)!;
      const [sent] = em[vendor].accepted();
      assert.ok(sent, `${vendor} got the push`);
      assert.equal(sent.title, 'Alice 👩‍👩‍👧');
      assert.equal(sent.body, 'See you at 7? 🇫🇷');
      const row = await rowOf(d);
      assert.equal(row.status, 1, vendor);
      assert.equal(row.unread_cnt, 7, vendor);
      assert.deepEqual(decodeTaskPayload(row.payload as Buffer), { title: sent.title, body: sent.body }, vendor);
      assert.equal(row.collapse_key, sent.collapseId, `${vendor}: the collapse id the vendor got`);
      assert.equal(row.collapse_key, row.collapse_id);
      assert.equal(row.merge_kind, 'LEADING', vendor);
    }
  });

  test('a private-mode user: the row stores the generic text that was sent, never the summary', async () => {
    const dispatches = await decide('u-private', ['fcm'], { private_mode: true }, { title: 'Bob', summary: 'the launch code is 0000', unread_cnt: 3 });
    assert.equal(dispatches.length, 1);
    await fo.send(dispatches[0]!);
    const [sent] = em.fcm.accepted();
    assert.equal(sent!.title, 'New message');
    assert.equal(sent!.body, 'You have a new message');
    const row = await rowOf(dispatches[0]!);
    assert.deepEqual(decodeTaskPayload(row.payload as Buffer), { title: 'New message', body: 'You have a new message' });
    assert.doesNotMatch((row.payload as Buffer).toString('utf8'), /launch code|Bob/);
    assert.equal(row.unread_cnt, 3);
  });

  test('OPPO, vivo and Xiaomi cut the summary to their own lengths: the row keeps the text each one got; after a fallback, the text of the vendor that took it', async () => {
    const body = `明天晚上七点在老地方见面吧，记得带上那本书和雨伞 — see you at seven tomorrow, bring the book 📚 and an umbrella ☔`;
    for (const vendor of ['oppo', 'vivo', 'xiaomi'] as const) {
      const d = dispatch({ uid: `u-cut-${vendor}`, device: 'd1', title: 'Carol 🎸', body, channels: [{ vendor, token: em.token(vendor, `cut-${vendor}`) }] });
      await fo.send(d);
      const [sent] = em[vendor].accepted();
      assert.ok(sent, `${vendor} got the push`);
      // OPPO (50) and vivo (50 Chinese, 100 ASCII) cut this summary; Xiaomi's 127 keeps it whole.
      if (vendor === 'xiaomi') assert.equal(sent.body, body);
      else assert.notEqual(sent.body, body, `${vendor} cut the summary`);
      assert.deepEqual(decodeTaskPayload((await rowOf(d)).payload as Buffer), { title: sent.title, body: sent.body }, vendor);
    }
    const dead = em.token('vivo', 'dead-vivo');
    em.vivo.deadTokens.add(dead);
    const d = dispatch({
      uid: 'u-fallback',
      device: 'd1',
      title: 'Carol 🎸',
      body,
      channels: [
        { vendor: 'vivo', token: dead },
        { vendor: 'fcm', token: em.token('fcm', 'fallback') },
      ],
    });
    await fo.send(d);
    const [sent] = em.fcm.accepted();
    assert.equal(sent!.body, body);
    const row = await rowOf(d);
    assert.equal(row.vendor, 'fcm');
    assert.deepEqual(decodeTaskPayload(row.payload as Buffer), { title: 'Carol 🎸', body });
  });

  test('a title too long for 1024 bytes is stored cut between grapheme clusters, with an ellipsis; the kind is the dispatch’s', async () => {
    const family = '👨‍👩‍👧‍👦';
    const d = dispatch({
      uid: 'u-long',
      device: 'd1',
      title: family.repeat(400),
      body: 'hi',
      kind: 'TRAILING',
      channels: [{ vendor: 'fcm', token: em.token('fcm', 'long') }],
    });
    await fo.send(d);
    assert.equal(em.fcm.accepted().length, 1);
    const row = await rowOf(d);
    const payload = row.payload as Buffer;
    assert.ok(payload.length <= TASK_PAYLOAD_MAX_BYTES, `${payload.length} bytes`);
    const stored = decodeTaskPayload(payload)!;
    assert.equal(stored.body, 'hi');
    assert.ok(stored.title.endsWith('…'));
    assert.ok(
      graphemes(stored.title.slice(0, -1)).every((g) => g === family),
      'only whole family emoji before the ellipsis',
    );
    assert.equal(row.merge_kind, 'TRAILING');
  });
});
