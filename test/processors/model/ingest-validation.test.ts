/**
 * The ingest rules of the decisions (docs/design.md, "Ingest validation") through the
 * TopologyTestDriver: a record breaking a rule ends in push.dlq with the rule in its reason and
 * leaves no trace in state, and the next valid record of the same user is decided as usual.
 * Tombstones on push.settings and push.tokens delete.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import avro from 'avsc';
import { loadSchema } from '../../../pipeline/schemas.ts';
import { TOPICS } from '../../../pipeline/topics.ts';
import { decisionsOptionsFromEnv } from '../../../pipeline/apps/decisions.ts';
import { POLICY_STORE_NAMES } from '../../../processors/policy/options.ts';
import { ONLINE_FILTER_STORE_NAMES } from '../../../processors/online-filter/options.ts';
import { DLQ_HEADERS } from '../../../topology/dlq.ts';
import type { MessagePersisted, PresenceEvent, TokenReport, UserSettings } from '../../../processors/model/records.ts';
import { APP, DecisionsHarness, briefOutcome, type HarnessOptions } from '../harness.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const YEAR = 365 * DAY;

async function withHarness(options: HarnessOptions, body: (h: DecisionsHarness) => Promise<void>): Promise<void> {
  const h = DecisionsHarness.create(options);
  try {
    await body(h);
  } finally {
    await h.close();
  }
}

interface DeadLetter {
  readonly sourceTopic: string;
  readonly code: string;
  readonly message: string;
}

function deadLetters(h: DecisionsHarness): DeadLetter[] {
  return h.driver.readAllOutputs(TOPICS.dlq.name).map((r) => ({
    sourceTopic: r.headers[DLQ_HEADERS.sourceTopic]!,
    code: r.headers[DLQ_HEADERS.errorCode]!,
    message: r.headers[DLQ_HEADERS.errorMessage]!,
  }));
}

/** Asserts exactly one dead letter from `topic`, breaking `rule`, and returns its reason. */
function assertRejected(h: DecisionsHarness, topic: string, rule: string): string {
  const letters = deadLetters(h);
  assert.equal(letters.length, 1, `one dead letter, got ${JSON.stringify(letters)}`);
  assert.equal(letters[0]!.sourceTopic, topic);
  assert.equal(letters[0]!.code, 'CONTRACT_VIOLATION');
  assert.match(letters[0]!.message, new RegExp(`breaks ingest rule ${rule}:`));
  return letters[0]!.message;
}

/** The next message of `uid` is pushed to its device as usual. */
async function assertNextMessagePushed(h: DecisionsHarness, uid: string, conv = 'next'): Promise<void> {
  await h.message(uid, conv);
  const { dispatches, outcomes } = h.drain();
  assert.deepEqual(outcomes.map(briefOutcome), []);
  assert.deepEqual(
    dispatches.map((d) => `${d.uid}:${d.conv_id}`),
    [`${uid}:${conv}`],
  );
  assert.deepEqual(deadLetters(h), []);
}

/** A message value with defaults for `uid`, stamped now. */
function messageValue(h: DecisionsHarness, uid: string, extra: Partial<MessagePersisted> = {}): MessagePersisted {
  return {
    msg_id: 'm-bad',
    conv_id: 'c-bad',
    conv_type: 'SINGLE',
    seq: 1,
    sender_uid: 'sender',
    uid,
    unread_cnt: 1,
    title: 'Chat',
    summary: 'hello',
    sensitive: false,
    mention: 'NONE',
    persisted_at: h.now,
    app_id: APP,
    ...extra,
  };
}

describe('ingest rules: persisted messages', () => {
  const rows: Array<{ name: string; extra: (h: DecisionsHarness) => Partial<MessagePersisted>; rule: string; key?: string }> = [
    { name: 'an empty msg_id', extra: () => ({ msg_id: '' }), rule: 'non_empty' },
    { name: 'an empty conv_id', extra: () => ({ conv_id: '' }), rule: 'non_empty' },
    { name: 'an empty uid', extra: () => ({ uid: '' }), rule: 'non_empty', key: '' },
    { name: 'a conv_id longer than im_push_task.conv_id (64)', extra: () => ({ conv_id: 'c'.repeat(65) }), rule: 'max_length' },
    { name: 'an app_id longer than its column (64)', extra: () => ({ app_id: 'a'.repeat(65) }), rule: 'max_length' },
    { name: 'a title over 1,024 characters', extra: () => ({ title: 't'.repeat(1_025) }), rule: 'max_length' },
    { name: 'a summary over 8,192 characters', extra: () => ({ summary: 's'.repeat(8_193) }), rule: 'max_length' },
    { name: 'a negative seq', extra: () => ({ seq: -1 }), rule: 'int_range' },
    { name: 'a negative unread_cnt', extra: () => ({ unread_cnt: -1 }), rule: 'int_range' },
    { name: 'persisted_at 0', extra: () => ({ persisted_at: 0 }), rule: 'epoch_ms' },
    { name: 'persisted_at ten minutes ahead', extra: (h) => ({ persisted_at: h.now + 10 * MINUTE }), rule: 'future_skew' },
    { name: 'persisted_at ten years ahead', extra: (h) => ({ persisted_at: h.now + 10 * YEAR }), rule: 'future_skew' },
    { name: 'persisted_at eight days ago (past the 7-day default)', extra: (h) => ({ persisted_at: h.now - 8 * DAY }), rule: 'past_skew' },
    { name: 'a uid other than the record key', extra: () => ({ uid: 'someone-else' }), rule: 'key_is_uid' },
  ];
  for (const row of rows) {
    test(`${row.name} → push.dlq (${row.rule}); the user's next message is pushed`, () =>
      withHarness({}, async (h) => {
        await h.token('u1', 'd1', 'fcm');
        const value = messageValue(h, 'u1', row.extra(h));
        await h.driver.pipeInput(TOPICS.persisted.name, row.key ?? 'u1', value);
        assertRejected(h, TOPICS.persisted.name, row.rule);
        assert.deepEqual(h.drain(), { dispatches: [], outcomes: [] }, 'no outcome for a rejected record');
        await assertNextMessagePushed(h, 'u1');
      }));
  }

  test('unread_cnt 2^31 (written by a producer whose schema says long) → push.dlq (int_range), not a failure at the sink node', () =>
    withHarness({}, async (h) => {
      await h.token('u1', 'd1', 'fcm');
      const base = loadSchema('message-persisted.avsc');
      const fields = (base.fields as Array<{ name: string; type: unknown }>).map((f) => (f.name === 'unread_cnt' ? { ...f, type: 'long' } : f));
      const bytes = avro.Type.forSchema({ ...base, fields } as avro.Schema).toBuffer(messageValue(h, 'u1', { unread_cnt: 2 ** 31 }));
      await h.driver.pipeRawInput(TOPICS.persisted.name, Buffer.from('u1'), bytes);
      const reason = assertRejected(h, TOPICS.persisted.name, 'int_range');
      assert.match(reason, /unread_cnt must be an integer in \[0, 2147483647\], got 2147483648/);
      assert.deepEqual(h.drain(), { dispatches: [], outcomes: [] });
      await assertNextMessagePushed(h, 'u1');
    }));

  test('a replay after a day-long outage passes: a message persisted 25 hours ago is decided', () =>
    withHarness({}, async (h) => {
      await h.token('u1', 'd1', 'fcm', { reported_at: h.now - 30 * DAY });
      await h.message('u1', 'c1', { persisted_at: h.now - 25 * HOUR });
      assert.equal(h.dispatches().length, 1);
      assert.deepEqual(deadLetters(h), []);
    }));

  test('the skews are configuration: with PUSH_INGEST_MAX_FUTURE_SKEW_MS of an hour, 30 minutes ahead passes', () => {
    const ingest = decisionsOptionsFromEnv({ PUSH_INGEST_MAX_FUTURE_SKEW_MS: String(HOUR), PUSH_INGEST_MAX_PAST_SKEW_MS: String(DAY) });
    assert.deepEqual(ingest.ingest, { maxFutureSkewMs: HOUR, maxPastSkewMs: DAY });
    return withHarness(ingest, async (h) => {
      await h.token('u1', 'd1', 'fcm');
      await h.message('u1', 'c1', { persisted_at: h.now + 30 * MINUTE });
      assert.equal(h.dispatches().length, 1);
      await h.message('u1', 'c2', { persisted_at: h.now - 25 * HOUR });
      assertRejected(h, TOPICS.persisted.name, 'past_skew');
    });
  });

  test('bad skew values fail at start naming their key', () => {
    assert.throws(() => decisionsOptionsFromEnv({ PUSH_INGEST_MAX_FUTURE_SKEW_MS: '0' }), /PUSH_INGEST_MAX_FUTURE_SKEW_MS/);
    assert.throws(() => decisionsOptionsFromEnv({ PUSH_INGEST_MAX_PAST_SKEW_MS: 'a week' }), /PUSH_INGEST_MAX_PAST_SKEW_MS/);
    assert.throws(() => DecisionsHarness.create({ ingest: { maxFutureSkewMs: 2 * DAY } }), /PUSH_INGEST_MAX_FUTURE_SKEW_MS/);
  });
});

describe('ingest rules: presence', () => {
  const rows: Array<{ name: string; extra: (h: DecisionsHarness) => Partial<PresenceEvent>; rule: string }> = [
    { name: 'a heartbeat ten minutes ahead (it would keep the device "online")', extra: (h) => ({ at: h.now + 10 * MINUTE }), rule: 'future_skew' },
    { name: 'an event eight days old', extra: (h) => ({ at: h.now - 8 * DAY }), rule: 'past_skew' },
    { name: 'an empty device_id', extra: () => ({ device_id: '' }), rule: 'non_empty' },
    { name: 'a device_id longer than its column (128)', extra: () => ({ device_id: 'd'.repeat(129) }), rule: 'max_length' },
    { name: 'an ACK without seq', extra: () => ({ kind: 'ACK', conv_id: 'c1', seq: null }), rule: 'ack_target' },
    { name: 'a negative seq', extra: () => ({ kind: 'READ', conv_id: 'c1', seq: -1 }), rule: 'int_range' },
  ];
  for (const row of rows) {
    test(`${row.name} → push.dlq (${row.rule}); the user's next message is pushed`, () =>
      withHarness({}, async (h) => {
        await h.token('u1', 'd1', 'fcm');
        const value: PresenceEvent = { uid: 'u1', device_id: 'd1', kind: 'HEARTBEAT', conv_id: null, seq: null, at: h.now, ...row.extra(h) };
        await h.driver.pipeInput(TOPICS.presence.name, 'u1', value);
        assertRejected(h, TOPICS.presence.name, row.rule);
        assert.equal(h.driver.getStateStore<{ size: number }>(ONLINE_FILTER_STORE_NAMES.presence).size, 0, 'no presence kept');
        await assertNextMessagePushed(h, 'u1');
      }));
  }

  test('a null value on im.presence (not a table) → push.dlq (tombstone)', () =>
    withHarness({}, async (h) => {
      await h.token('u1', 'd1', 'fcm');
      await h.driver.pipeRawInput(TOPICS.presence.name, Buffer.from('u1'), null);
      assertRejected(h, TOPICS.presence.name, 'tombstone');
      await assertNextMessagePushed(h, 'u1');
    }));
});

describe('ingest rules: tokens', () => {
  test('a token stamped ten years ahead is refused, so a correct later report applies', () =>
    withHarness({}, async (h) => {
      await h.token('u1', 'd1', 'fcm', { token: 'old-token' });
      await h.token('u1', 'd1', 'fcm', { token: 'from-the-future', reported_at: h.now + 10 * YEAR });
      const reason = assertRejected(h, TOPICS.tokens.name, 'future_skew');
      assert.doesNotMatch(reason, /from-the-future/, 'the token never reaches a DLQ reason');
      await h.advanceTo(1_000);
      await h.token('u1', 'd1', 'fcm', { token: 'new-token' });
      await h.message('u1', 'c1');
      const dispatches = h.dispatches();
      assert.deepEqual(
        dispatches.map((d) => d.channels.map((c) => c.token)),
        [['new-token']],
      );
    }));

  const rows: Array<{ name: string; extra: Partial<TokenReport>; rule: string }> = [
    { name: 'a token longer than im_push_token.token (512)', extra: { token: 'x'.repeat(513) }, rule: 'max_length' },
    { name: 'a platform longer than its column (16)', extra: { platform: 'p'.repeat(17) }, rule: 'max_length' },
    { name: 'an invalidation reason longer than its column (64)', extra: { state: 'INVALID', reason: 'r'.repeat(65) }, rule: 'max_length' },
    { name: 'an empty device_id', extra: { device_id: '' }, rule: 'non_empty' },
    { name: 'an unknown vendor', extra: { vendor: 'pigeon' }, rule: 'known_vendor' },
    { name: 'a VALID report without a token', extra: { token: '' }, rule: 'token_present' },
    { name: 'reported_at 0', extra: { reported_at: 0 }, rule: 'epoch_ms' },
  ];
  for (const row of rows) {
    test(`${row.name} → push.dlq (${row.rule}); the user's next message is pushed`, () =>
      withHarness({}, async (h) => {
        await h.token('u1', 'd1', 'fcm');
        await h.token('u1', 'd2', 'fcm', row.extra);
        assertRejected(h, TOPICS.tokens.name, row.rule);
        await assertNextMessagePushed(h, 'u1');
      }));
  }

  test("a tombstone on push.tokens removes the user's tokens: the next message is dropped (no_token), a new report applies", () =>
    withHarness({}, async (h) => {
      await h.token('u1', 'd1', 'fcm');
      await h.token('u1', 'd2', 'apns');
      await h.token('u2', 'd9', 'fcm');
      await h.driver.pipeRawInput(TOPICS.tokens.name, Buffer.from('u1'), null);
      assert.deepEqual(deadLetters(h), []);
      assert.equal(h.driver.getStateStore<{ get(k: string): unknown }>(POLICY_STORE_NAMES.tokens).get('u1'), undefined);
      assert.equal(h.driver.getStateStore<{ get(k: string): unknown }>(ONLINE_FILTER_STORE_NAMES.devices).get('u1'), undefined);
      await h.message('u1', 'c1');
      assert.deepEqual(h.drain().outcomes.map(briefOutcome), ['-:c1#1 DROPPED no_token']);
      await assertNextMessagePushed(h, 'u2');
      await h.token('u1', 'd1', 'fcm');
      await assertNextMessagePushed(h, 'u1');
    }));
});

describe('ingest rules: settings', () => {
  const night = { start_minute: 22 * 60, end_minute: 7 * 60 };

  test('a tombstone on push.settings deletes them: the next message is decided with the default settings', () =>
    withHarness({}, async (h) => {
      await h.token('u1', 'd1', 'fcm');
      await h.settings('u1', { muted_conversations: ['c1'] });
      await h.message('u1', 'c1');
      assert.deepEqual(h.drain().outcomes.map(briefOutcome), ['d1:c1#1 SUPPRESSED mute']);
      await h.driver.pipeRawInput(TOPICS.settings.name, Buffer.from('u1'), null);
      assert.deepEqual(deadLetters(h), []);
      assert.deepEqual(h.driver.changelog(POLICY_STORE_NAMES.settings).at(-1), { key: 'u1', value: null }, 'deleted from the changelogged store');
      await h.advanceTo(30_000); // past the merge window of the first message
      h.drain();
      await h.message('u1', 'c1');
      const { dispatches, outcomes } = h.drain();
      assert.deepEqual(outcomes, []);
      assert.equal(dispatches.length, 1);
    }));

  test('settings stamped ten years ahead are refused, so a correct later change applies', () =>
    withHarness({}, async (h) => {
      await h.token('u1', 'd1', 'fcm');
      await h.settings('u1', { muted_conversations: ['c1'], updated_at: h.now + 10 * YEAR });
      assertRejected(h, TOPICS.settings.name, 'future_skew');
      await h.advanceTo(1_000);
      await h.settings('u1', { muted_conversations: ['c2'] });
      await h.message('u1', 'c1');
      assert.equal(h.dispatches().length, 1, 'c1 is not muted');
      await h.message('u1', 'c2');
      assert.deepEqual(h.drain().outcomes.map(briefOutcome), ['d1:c2#1 SUPPRESSED mute']);
    }));

  test('settings and a token kept with stamps years ahead (state from before the rule) are replaced by a correct update', () =>
    withHarness({}, async (h) => {
      await h.token('u1', 'd1', 'fcm', { token: 'new-token' });
      const ahead = h.now + 10 * YEAR;
      const settings = h.driver.getStateStore<{ put(k: string, v: UserSettings): void }>(POLICY_STORE_NAMES.settings);
      settings.put('u1', { uid: 'u1', time_zone: 'UTC', quiet_hours: null, muted_conversations: ['c1'], private_mode: false, updated_at: ahead });
      const tokens = h.driver.getStateStore<{ put(k: string, v: unknown): void }>(POLICY_STORE_NAMES.tokens);
      tokens.put('u1', {
        d1: { platform: 'android', manufacturer: null, tokens: { fcm: { token: 'stuck-token', app_id: APP, state: 'VALID', reported_at: ahead } } },
      });
      await h.settings('u1', { muted_conversations: [] });
      await h.token('u1', 'd1', 'fcm', { token: 'new-token' });
      await h.message('u1', 'c1');
      const { dispatches, outcomes } = h.drain();
      assert.deepEqual(outcomes, [], 'c1 is no longer muted');
      assert.deepEqual(
        dispatches.map((d) => d.channels.map((c) => c.token)),
        [['new-token']],
      );
    }));

  const rows: Array<{ name: string; extra: Partial<UserSettings>; rule: string }> = [
    { name: 'an unknown IANA zone (it used to mean UTC silently)', extra: { time_zone: 'Mars/Olympus', quiet_hours: night }, rule: 'known_zone' },
    { name: 'a UTC offset instead of a zone name', extra: { time_zone: '+08:00', quiet_hours: night }, rule: 'known_zone' },
    { name: 'quiet hours past the day', extra: { quiet_hours: { start_minute: 1440, end_minute: 60 } }, rule: 'int_range' },
    { name: 'an empty muted conversation', extra: { muted_conversations: ['c9', ''] }, rule: 'non_empty' },
    { name: 'more than 10,000 muted conversations', extra: { muted_conversations: Array.from({ length: 10_001 }, (_, i) => `c${i}`) }, rule: 'max_length' },
  ];
  for (const row of rows) {
    test(`${row.name} → push.dlq (${row.rule}); the earlier settings still apply`, () =>
      withHarness({}, async (h) => {
        await h.token('u1', 'd1', 'fcm');
        await h.settings('u1', { muted_conversations: ['c1'] });
        await h.settings('u1', row.extra);
        assertRejected(h, TOPICS.settings.name, row.rule);
        await h.message('u1', 'c1');
        assert.deepEqual(h.drain().outcomes.map(briefOutcome), ['d1:c1#1 SUPPRESSED mute'], 'the earlier settings were kept');
        await assertNextMessagePushed(h, 'u1');
      }));
  }

  test('zones are kept by their canonical name and their rules apply (asia/shanghai is Asia/Shanghai)', () =>
    withHarness({}, async (h) => {
      await h.token('u1', 'd1', 'fcm');
      // T0 is 12:00 UTC = 20:00 in Shanghai; quiet hours 22–07 there begin 2 h later.
      await h.settings('u1', { time_zone: 'asia/shanghai', quiet_hours: night });
      assert.equal(h.driver.getStateStore<{ get(k: string): UserSettings | undefined }>(POLICY_STORE_NAMES.settings).get('u1')?.time_zone, 'Asia/Shanghai');
      await h.advanceTo(2.5 * HOUR, HOUR);
      await h.message('u1', 'c1');
      assert.deepEqual(h.drain().outcomes.map(briefOutcome), ['d1:c1#1 SUPPRESSED dnd']);
    }));
});
