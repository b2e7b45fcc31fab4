/**
 * The poison suite, end to end: one running worker process (every stage, the receipt
 * receiver), and for each class of poison — out-of-range fields, absurd and future time stamps,
 * unknown zones, tombstones, 1 MB inputs, absurd receipt times, cross-app receipts, a replayed HMS
 * header on a second receiver, emoji/ZWJ/CJK texts at every vendor's limit, MySQL access denied and
 * read-only — the record ends in push.dlq with its reason or in its documented outcome
 * (docs/design.md, "Ingest validation", "receipts and tokens" and "Poison records and restarts"),
 * the worker never exits or restarts, and a message produced to the same partition right after the
 * poison reaches its vendor's emulator within 5 s.
 */
import { after, before, describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import avro from 'avsc';
import type { RowDataPacket } from 'mysql2/promise';
import { loadSchema } from '../../pipeline/schemas.ts';
import type { Vendor } from '../../processors/fan-out/vendor-port.ts';
import type { ReceiptRaw } from '../../processors/receipt-join/records.ts';
import type { UserSettings } from '../../processors/model/records.ts';
import { hmsCallbackHeader } from '../../sinks/vendors/hms/receipts.ts';
import { DLQ_HEADERS } from '../../topology/dlq.ts';
import { registerSchema } from '../../topology/registry-serde.ts';
import { receiptBodies } from '../receipts/support.ts';
import { FOLLOW_UP_LIMIT_MS, PoisonChecks, WAIT_MS, assertBreaksRule, hmsCallback, postReceipt, sameSource, settings } from './poison-checks.ts';
import { partitionOf, PoisonStack, VENDOR_LIST, type OfflineUser, type Produced } from './poison-stack.ts';
import { assertLeadingGraphemes, fill, POOLS } from './poison-texts.ts';
import { startSecondReceiver, type SecondReceiver } from './second-receiver.ts';
import { INGEST_RULE_ROWS, mysqlOutage } from './poison-cases.ts';

const PARTITIONS = 3;
const MINUTE = 60_000;
const YEAR = 365 * 24 * 60 * MINUTE;

let stack: PoisonStack;
let c: PoisonChecks;
let second: SecondReceiver | undefined;
let caseNo = 0;

/** Runs one poison case and then checks that the worker is still running and no stage restarted meanwhile. */
async function poisonCase(t: TestContext, body: () => Promise<void>): Promise<void> {
  const restartsBefore = await stack.metricTotal('push_app_restarts_total');
  try {
    await body();
  } finally {
    // Diagnostics only: a worker that does not answer is asserted on just below.
    const restarts = (await stack.metric('push_app_restarts_total').catch(() => [])).filter((s) => s.value > 0);
    if (restarts.length > 0) t.diagnostic(`restarts so far: ${JSON.stringify(restarts)}`);
  }
  assert.equal(stack.workerExit(), undefined, 'the worker process is still running');
  assert.equal(await stack.metricTotal('push_app_restarts_total'), restartsBefore, 'no stage restarted during this case');
}

/** The partition the next case puts its poison on (cases go round the partitions). */
const nextPartition = () => caseNo++ % PARTITIONS;

describe('poison suite: no record, receipt or MySQL error stops the running pipeline', { timeout: 300_000 }, () => {
  before(
    async () => {
      stack = await PoisonStack.start(PARTITIONS);
      c = await PoisonChecks.open(stack);
      await stack.registerOfflineUsers(54);
      // Every partition pushes before the first poison.
      await Promise.all(
        Array.from({ length: PARTITIONS }, async (_, p) => {
          const user = stack.takeUser(p);
          const { value } = await stack.sendMessage(user, 'warm-up');
          await stack.accepted(user, value.conv_id, 60_000);
        }),
      );
    },
    { timeout: 180_000 },
  );

  after(
    async () => {
      await second?.close();
      await stack?.close();
    },
    { timeout: 60_000 },
  );

  describe('decision inputs breaking an ingest rule go to push.dlq with the rule', () => {
    for (const row of INGEST_RULE_ROWS) {
      test(`${row.topic}: ${row.name} → push.dlq (${row.rule}); the next message on its partition is pushed within 5 s`, (t) =>
        poisonCase(t, async () => {
          const victim = stack.takeUser(nextPartition());
          const poison = await stack.send(row.topic, victim.uid, row.value(stack, victim));
          const next = c.followUp(poison.partition);
          assertBreaksRule(await c.deadLetterOf(poison), row.rule);
          await next;
          if (row.topic === 'persisted')
            assert.deepEqual(
              recordingsOf(victim).map((r) => r.answer),
              [],
              "nothing was pushed to the poison's user",
            );
        }));
    }

    test('im.message.persisted: unread_cnt 2^31 written with a schema that says long → push.dlq, never a failure at a sink node', (t) =>
      poisonCase(t, async () => {
        const victim = stack.takeUser(nextPartition());
        const base = loadSchema('message-persisted.avsc');
        const schema = {
          ...base,
          fields: (base.fields as Array<{ name: string; type: unknown }>).map((f) => (f.name === 'unread_cnt' ? { ...f, type: 'long' } : f)),
        };
        const id = await registerSchema(stack.registry, schema, `${stack.env.topicPrefix}poison-long-unread-value`);
        const body = avro.Type.forSchema(schema as avro.Schema).toBuffer(stack.message(victim.uid, 'poison', { unread_cnt: 2 ** 31 }));
        const framed = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), body]);
        framed.writeInt32BE(id, 1);
        const poison = await stack.sendRaw('persisted', victim.uid, framed);
        const next = c.followUp(poison.partition);
        const letter = await c.deadLetterOf(poison);
        t.diagnostic(`${letter.headers[DLQ_HEADERS.errorCode]}: ${letter.headers[DLQ_HEADERS.errorMessage]}`);
        assert.ok(
          letter.headers[DLQ_HEADERS.errorCode] === 'DESERIALIZATION_FAILED' ||
            /breaks ingest rule int_range: unread_cnt/.test(letter.headers[DLQ_HEADERS.errorMessage] ?? ''),
          `refused as undecodable with the topic's int or by the int_range rule, got ${letter.headers[DLQ_HEADERS.errorCode]}`,
        );
        await next;
        assert.deepEqual(recordingsOf(victim), []);
      }));

    test('im.message.persisted and im.presence: tombstones (not tables) → push.dlq (tombstone)', (t) =>
      poisonCase(t, async () => {
        const victim = stack.takeUser(nextPartition());
        const persisted = await stack.sendRaw('persisted', victim.uid, null);
        const presence = await stack.sendRaw('presence', victim.uid, null);
        const next = c.followUp(persisted.partition);
        assertBreaksRule(await c.deadLetterOf(persisted), 'tombstone');
        assertBreaksRule(await c.deadLetterOf(presence), 'tombstone');
        await next;
      }));
  });

  describe('1 MB inputs', () => {
    test('a persisted message with a 1 MB summary → push.dlq (max_length) with all its bytes; the partition goes on', (t) =>
      poisonCase(t, async () => {
        const victim = stack.takeUser(nextPartition());
        const value = stack.message(victim.uid, 'poison', { summary: 's'.repeat(1_000_000) });
        const bytes = (await stack.serdes('persisted').serialize(stack.topic('persisted'), value)) as Buffer;
        const poison = await stack.sendRaw('persisted', victim.uid, bytes);
        const next = c.followUp(poison.partition);
        const letter = await c.deadLetterOf(poison);
        assertBreaksRule(letter, 'max_length');
        assert.equal(letter.valueBytes, bytes.length, "the DLQ keeps the input's bytes");
        await next;
        assert.deepEqual(recordingsOf(victim), []);
      }));

    test('1 MB of bytes that are not Avro on im.message.persisted → push.dlq (deserialization)', (t) =>
      poisonCase(t, async () => {
        const victim = stack.takeUser(nextPartition());
        const poison = await stack.sendRaw('persisted', victim.uid, randomBytes(1_000_000).fill(0x7b, 0, 1));
        const next = c.followUp(poison.partition);
        const letter = await c.deadLetterOf(poison);
        assert.equal(letter.headers[DLQ_HEADERS.phase], 'deserialization');
        assert.equal(letter.headers[DLQ_HEADERS.errorCode], 'DLQ_BAD_FRAMING');
        assert.equal(letter.valueBytes, 1_000_000);
        await next;
      }));
  });

  describe('time stamps, zones and tombstones on the tables', () => {
    test("push.tokens: a token stamped ten years ahead → push.dlq (future_skew); the user's messages keep going to the token they had", (t) =>
      poisonCase(t, async () => {
        const victim = stack.takeUser(nextPartition(), 'fcm');
        const future = stack.env.emulators.token('fcm', `${victim.deviceId}-future`);
        const poison = await stack.send('tokens', victim.uid, stack.tokenReport(victim, { token: future, reported_at: Date.now() + 10 * YEAR }));
        const next = c.followUp(poison.partition);
        const letter = await c.deadLetterOf(poison);
        assertBreaksRule(letter, 'future_skew');
        assert.ok(!(letter.headers[DLQ_HEADERS.errorMessage] ?? '').includes(future), 'the reason never names the token');
        await next;
        const { value } = await stack.sendMessage(victim, 'after-future-token');
        await stack.accepted(victim, value.conv_id, WAIT_MS);
        assert.equal(stack.env.emulators.fcm.received.filter((r) => r.token === future).length, 0, 'nothing went to the future-stamped token');
      }));

    const settingsRows: Array<{ name: string; rule: string; bad: (uid: string) => UserSettings }> = [
      {
        name: 'an unknown IANA zone',
        rule: 'known_zone',
        bad: (uid) => settings(uid, { time_zone: 'Mars/Olympus', quiet_hours: { start_minute: 0, end_minute: 1439 } }),
      },
      { name: 'settings stamped ten years ahead', rule: 'future_skew', bad: (uid) => settings(uid, { updated_at: Date.now() + 10 * YEAR }) },
    ];
    for (const row of settingsRows) {
      test(`push.settings: ${row.name} → push.dlq (${row.rule}); the earlier settings still apply`, (t) =>
        poisonCase(t, async () => {
          const victim = stack.takeUser(nextPartition());
          const muted = stack.conv('muted');
          await stack.send('settings', victim.uid, settings(victim.uid, { muted_conversations: [muted] }));
          const poison = await stack.send('settings', victim.uid, row.bad(victim.uid));
          const next = c.followUp(poison.partition);
          assertBreaksRule(await c.deadLetterOf(poison), row.rule);
          await next;
          await stack.send('persisted', victim.uid, { ...stack.message(victim.uid, 'muted'), conv_id: muted, msg_id: `m-${muted}` });
          const suppressed = await c.outcomeOf(victim.uid, muted, 'SUPPRESSED');
          assert.equal(suppressed.value.reason, 'mute', 'the conversation muted before the poison is still muted');
        }));
    }

    test("push.settings: a tombstone deletes the user's settings (a muted conversation is pushed again); no dead letter", (t) =>
      poisonCase(t, async () => {
        const victim = stack.takeUser(nextPartition());
        const [mutedA, mutedB] = [stack.conv('muted'), stack.conv('muted')];
        await stack.send('settings', victim.uid, settings(victim.uid, { muted_conversations: [mutedA, mutedB] }));
        await stack.send('persisted', victim.uid, { ...stack.message(victim.uid, 'muted'), conv_id: mutedA, msg_id: `m-${mutedA}` });
        assert.equal((await c.outcomeOf(victim.uid, mutedA, 'SUPPRESSED')).value.reason, 'mute', 'muted before the tombstone');
        const tombstone = await stack.sendRaw('settings', victim.uid, null);
        const next = c.followUp(tombstone.partition);
        await stack.waitRead('decisions', [stack.topic('settings')]);
        await stack.send('persisted', victim.uid, { ...stack.message(victim.uid, 'muted'), conv_id: mutedB, msg_id: `m-${mutedB}` });
        await stack.accepted(victim, mutedB, WAIT_MS);
        await next;
        assert.deepEqual(
          c.dlq.records.filter(sameSource(tombstone)).map((r) => r.headers[DLQ_HEADERS.errorMessage]),
          [],
          'the tombstone is no poison',
        );
      }));

    test("push.tokens: a tombstone deletes the user's tokens (the next message is DROPPED no_token); no stage dead-letters it", (t) =>
      poisonCase(t, async () => {
        const victim = stack.takeUser(nextPartition());
        const tombstone = await stack.sendRaw('tokens', victim.uid, null);
        const next = c.followUp(tombstone.partition);
        await stack.waitRead('decisions', [stack.topic('tokens')]);
        const { value } = await stack.sendMessage(victim, 'no-token');
        const dropped = await c.outcomes.waitFor(
          (r) => r.value?.uid === victim.uid && r.value.conv_id === value.conv_id,
          WAIT_MS,
          'the outcome after the tombstone',
        );
        assert.deepEqual([dropped.value.status, dropped.value.reason], ['DROPPED', 'no_token']);
        await next;
        await stack.waitRead('receipts', [stack.topic('tokens')]);
        assert.deepEqual(
          c.dlq.records.filter(sameSource(tombstone)).map((r) => r.headers[DLQ_HEADERS.errorMessage]),
          [],
          'neither the decisions nor the receipts dead-letter it',
        );
        assert.deepEqual(recordingsOf(victim), []);
      }));
  });

  describe('receipts', () => {
    const hmsPartition = () => partitionOf('hms', PARTITIONS);

    test("the receiver answers 400 invalid_receipt to receipts stamped 1e20 or 1.5; the vendor's genuine receipts still match", (t) =>
      poisonCase(t, async () => {
        const { hms, sharedSecret } = stack.receiptCredentials();
        const app = stack.env.appId;
        const now = Date.now();
        const json = { 'content-type': 'application/json' };
        const signed = () => ({ ...json, 'x-huawei-callback-id': hmsCallbackHeader(hms, Date.now(), randomUUID()) });
        const refused = [
          await postReceipt(stack.env.receiptPort, `/receipts/hms/${app}`, hmsCallback(`req-${randomUUID()}`, 'hms-any', 0, 1e20), signed()),
          await postReceipt(stack.env.receiptPort, `/receipts/hms/${app}`, hmsCallback(`req-${randomUUID()}`, 'hms-any', 0, 1.5), signed()),
          await postReceipt(
            stack.env.receiptPort,
            `/receipts/xiaomi/${app}?key=${sharedSecret}`,
            receiptBodies.xiaomi(`mi-${randomUUID()}`, 'regid', 1, 1e20),
            { 'content-type': 'application/x-www-form-urlencoded' },
          ),
          await postReceipt(
            stack.env.receiptPort,
            `/receipts/vivo/${app}?key=${sharedSecret}`,
            receiptBodies.vivo(`vv-${randomUUID()}`, 'regid', 1, now + 60 * MINUTE),
            json,
          ),
        ];
        assert.deepEqual(
          refused,
          refused.map(() => ({ status: 400, body: 'invalid_receipt' })),
        );
        const next = await c.followUp(hmsPartition(), 'hms');
        const accepted = await c.outcomeOf(next.user.uid, next.conv, 'ACCEPTED');
        await c.receipts.waitFor(
          (r) => r.value?.task_id === accepted.value.task_id && r.value.status === 'DELIVERED' && r.value.matched,
          WAIT_MS,
          "the follow-up's delivered receipt",
        );
      }));

    test('push.receipts.raw: callbacks stamped 1e20 and 1.5 produced directly → push.dlq (epoch_ms) from receipt-parse; the next receipt matches', (t) =>
      poisonCase(t, async () => {
        const poisons: Produced[] = [];
        for (const timestamp of [1e20, 1.5]) {
          const body = Buffer.from(hmsCallback(`req-${randomUUID()}`, 'hms-any', 0, timestamp));
          const value: ReceiptRaw = {
            receipt_id: createHash('sha256').update(body).digest('hex'),
            vendor: 'hms',
            app_id: stack.env.appId,
            content_type: 'application/json',
            body,
            received_at: Date.now(),
          };
          poisons.push(await stack.send('receiptsRaw', 'hms', value));
        }
        const next = c.followUp(poisons[0]!.partition, 'hms');
        for (const poison of poisons) assertBreaksRule(await c.deadLetterOf(poison, 'receipts'), 'epoch_ms');
        const { user, conv } = await next;
        const accepted = await c.outcomeOf(user.uid, conv, 'ACCEPTED');
        await c.receipts.waitFor(
          (r) => r.value?.task_id === accepted.value.task_id && r.value.status === 'DELIVERED' && r.value.matched,
          WAIT_MS,
          "the follow-up's delivered receipt",
        );
      }));

    test("cross-app: app B's genuine dead-token receipt naming app A's push changes neither A's task nor A's token", (t) =>
      poisonCase(t, async () => {
        const other = {
          appId: `other-${stack.env.run}`,
          hms: { callbackUsername: 'push-receipts', callbackKey: randomBytes(16).toString('hex') },
          sharedSecret: randomBytes(16).toString('hex'),
        };
        second ??= await startSecondReceiver(stack, [{ appId: stack.env.appId, ...stack.receiptCredentials() }, other]);
        // Control: the same dead-token receipt from the push's own app invalidates its token.
        const control = stack.takeUser(hmsPartition(), 'hms');
        const own = await c.deliveredPush(control);
        const ownHeader = hmsCallbackHeader(stack.receiptCredentials().hms, Date.now(), randomUUID());
        assert.equal(
          (
            await postReceipt(stack.env.receiptPort, `/receipts/hms/${stack.env.appId}`, c.hmsCallbackAbout(own.requestId, control, 2, Date.now()), {
              'content-type': 'application/json',
              'x-huawei-callback-id': ownHeader,
            })
          ).status,
          200,
        );
        await c.receipts.waitFor(
          (r) => r.value?.vendor_message_id === own.requestId && r.value.status === 'DEAD_TOKEN',
          WAIT_MS,
          "control: the own app's dead-token receipt",
        );
        await c.tokenReports.waitFor((r) => r.value?.device_id === control.deviceId && r.value.state === 'INVALID', WAIT_MS, 'control: the invalidation');

        const victim = stack.takeUser(hmsPartition(), 'hms');
        const { requestId, taskId } = await c.deliveredPush(victim);
        const header = hmsCallbackHeader(other.hms, Date.now(), randomUUID());
        const answer = await postReceipt(second.port, `/receipts/hms/${other.appId}`, c.hmsCallbackAbout(requestId, victim, 2, Date.now()), {
          'content-type': 'application/json',
          'x-huawei-callback-id': header,
        });
        assert.equal(answer.status, 200, "B's credentials are genuine, so its receiver takes the callback");
        await c.rawReceipts.waitFor((r) => r.value?.app_id === other.appId, WAIT_MS, 'the cross-app callback on push.receipts.raw');
        const next = c.followUp(hmsPartition(), 'hms');
        await c.assertTokenUntouched(victim, requestId);
        const [rows] = await stack.mysql.pool.query<Array<{ status: number } & RowDataPacket>>('SELECT status FROM im_push_task WHERE task_id = ?', [taskId]);
        assert.deepEqual(
          rows.map((r) => r.status),
          [2],
          'the task stays delivered',
        );
        await next;
      }));

    test("a captured HMS header replayed with a forged body on a second receiver → 401; the vendor's own retry is taken", (t) =>
      poisonCase(t, async () => {
        second ??= await startSecondReceiver(stack, [{ appId: stack.env.appId, ...stack.receiptCredentials() }]);
        const { hms } = stack.receiptCredentials();
        const victim = stack.takeUser(hmsPartition(), 'hms');
        const { requestId } = await c.deliveredPush(victim);
        const path = `/receipts/hms/${stack.env.appId}`;
        const now = Date.now();
        const header = { 'content-type': 'application/json', 'x-huawei-callback-id': hmsCallbackHeader(hms, now, randomUUID()) };
        const genuine = c.hmsCallbackAbout(requestId, victim, 0, now);
        const forged = c.hmsCallbackAbout(requestId, victim, 2, now);
        assert.equal((await postReceipt(stack.env.receiptPort, path, genuine, header)).status, 200, "the worker's receiver takes the genuine callback");
        assert.equal((await postReceipt(second.port, path, forged, header)).status, 401, 'the second receiver refuses the replayed header');
        assert.equal((await postReceipt(second.port, path, genuine, header)).status, 200, "the same callback again is the vendor's retry");
        const copies = (body: string) => c.rawReceipts.records.filter((r) => r.value && Buffer.from(r.value.body).toString('utf8') === body).length;
        await c.rawReceipts.waitFor(() => copies(genuine) >= 2, WAIT_MS, 'both genuine copies');
        assert.equal(copies(forged), 0, 'the forged body never reached push.receipts.raw');
        const next = c.followUp(hmsPartition(), 'hms');
        await c.assertTokenUntouched(victim, requestId);
        await next;
      }));
  });

  test("emoji, ZWJ and CJK titles and summaries as long as ingest allows, and at each Chinese vendor's exact limit, are accepted by every vendor, never split", (t) =>
    poisonCase(t, async () => {
      const texts = Object.entries(POOLS).map(([script, pool]) => ({ label: script, title: fill(pool, 1_024), summary: fill(pool, 8_192), whole: false }));
      const atLimit: Partial<Record<Vendor, { title: number; summary: number }>> = {
        xiaomi: { title: 49, summary: 100 },
        oppo: { title: 50, summary: 50 },
        vivo: { title: 20, summary: 50 },
      };
      const sent: Array<{ user: OfflineUser; conv: string; label: string; title: string; summary: string; whole: boolean }> = [];
      const partitions = new Set<number>();
      for (const vendor of VENDOR_LIST) {
        const user = stack.takeUser(nextPartition(), vendor);
        partitions.add(user.partition);
        const limit = atLimit[vendor];
        const own = limit ? [{ label: 'at the limit', title: '消'.repeat(limit.title), summary: '息'.repeat(limit.summary), whole: true }] : [];
        for (const text of [...texts, ...own]) {
          const { value } = await stack.sendMessage(user, `text-${text.label}`, { title: text.title, summary: text.summary });
          sent.push({ user, conv: value.conv_id, ...text });
        }
      }
      const next = Promise.all([...partitions].map((p) => c.followUp(p)));
      for (const s of sent) {
        const label = `${s.user.vendor} ${s.label}`;
        const got = await stack.accepted(s.user, s.conv, WAIT_MS);
        assert.deepEqual(
          stack.pushesTo(s.user, s.conv).map((r) => r.answer),
          ['accepted'],
          `${label}: accepted at the first request`,
        );
        assertLeadingGraphemes(s.title, got.title, `${label} title`);
        assertLeadingGraphemes(s.summary, got.body, `${label} body`);
        if (s.whole) assert.deepEqual([got.title, got.body], [s.title, s.summary], `${label}: texts at the documented limit arrive whole`);
      }
      t.diagnostic(`${sent.length} pushes accepted`);
      await next;
    }));

  describe('MySQL errors are retried until MySQL takes the write', () => {
    const outage = (breakMysql: () => Promise<unknown>, repair: () => Promise<unknown>, code: string) =>
      mysqlOutage(stack, c, nextPartition(), breakMysql, repair, code);
    const grant = () => stack.mysql.pool.query(`GRANT INSERT, UPDATE ON \`${stack.mysql.database}\`.\`im_push_task\` TO '${stack.mysql.user}'@'%'`);

    test("access denied (the worker's INSERT and UPDATE on im_push_task revoked, then granted again)", (t) =>
      poisonCase(t, () =>
        outage(
          () => stack.mysql.pool.query(`REVOKE INSERT, UPDATE ON \`${stack.mysql.database}\`.\`im_push_task\` FROM '${stack.mysql.user}'@'%'`),
          grant,
          'ER_TABLEACCESS_DENIED_ERROR',
        ),
      ));

    test('read-only after a failover (SET GLOBAL read_only for a user without SUPER, then back)', (t) =>
      poisonCase(t, () =>
        outage(
          () => stack.mysql.pool.query('SET GLOBAL read_only = 1'),
          () => stack.mysql.pool.query('SET GLOBAL read_only = 0'),
          'ER_OPTION_PREVENTS_STATEMENT',
        ),
      ));
  });

  test('push.settings: a near-1 MB record within the ingest rules (5,000+ muted CJK conversations) is applied or dead-lettered, never a restart', (t) =>
    poisonCase(t, async () => {
      const victim = stack.takeUser(nextPartition());
      const muted: string[] = [];
      const value = settings(victim.uid, { muted_conversations: muted });
      const serde = stack.serdes('settings');
      // Ids of 64 UTF-16 units (the max_length rule's bound), mostly CJK (3 bytes each in UTF-8), up
      // to just under the broker's 1,048,588-byte record limit as Avro. The store keeps them as JSON.
      const id = (i: number) => `${i}`.padEnd(64, '会');
      const size = async () => ((await serde.serialize(stack.topic('settings'), value)) as Buffer).length;
      for (let estimate = await size(); estimate < 1_047_500; estimate += Buffer.byteLength(id(muted.length)) + 2) muted.push(id(muted.length));
      while ((await size()) > 1_048_000) muted.pop();
      const bytes = (await serde.serialize(stack.topic('settings'), value)) as Buffer;
      t.diagnostic(`settings record: ${muted.length} muted conversations, ${bytes.length} bytes as Avro, ${Buffer.byteLength(JSON.stringify(value))} as JSON`);
      const poison = await stack.sendRaw('settings', victim.uid, bytes);
      const next = c.followUp(poison.partition);
      await next;
      await stack.waitRead('decisions', [stack.topic('settings')]);
      const letter = c.dlq.records.find(sameSource(poison));
      if (letter) {
        t.diagnostic(`dead-lettered: ${letter.headers[DLQ_HEADERS.errorCode]} ${letter.headers[DLQ_HEADERS.errorMessage]}`);
      } else {
        await stack.send('persisted', victim.uid, { ...stack.message(victim.uid, 'muted'), conv_id: muted[7]!, msg_id: `m-muted-${randomUUID()}` });
        assert.equal((await c.outcomeOf(victim.uid, muted[7]!, 'SUPPRESSED')).value.reason, 'mute', 'applied: the muted conversation is suppressed');
      }
    }));

  test('at the end: the worker process runs, and /metrics shows no restart of any stage', async (t) => {
    const ms = [...c.followUpMs].sort((a, b) => a - b);
    t.diagnostic(`${ms.length} follow-ups, produce → vendor: median ${ms[ms.length >> 1]} ms, max ${ms.at(-1)} ms (limit ${FOLLOW_UP_LIMIT_MS} ms)`);
    assert.equal(stack.workerExit(), undefined);
    assert.deepEqual(
      (await stack.metric('push_app_restarts_total')).filter((s) => s.value !== 0),
      [],
      'push_app_restarts_total is absent or 0',
    );
    assert.deepEqual(
      (await stack.metric('push_app_consecutive_restarts')).filter((s) => s.value !== 0),
      [],
      'push_app_consecutive_restarts is absent or 0',
    );
    assert.equal(second?.exit(), undefined, 'the second receiver runs');
  });
});

function recordingsOf(user: OfflineUser) {
  return stack.env.emulators[user.vendor].received.filter((r) => r.token === user.token);
}
