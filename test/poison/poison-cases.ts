/**
 * Cases of the poison suite (poison-suite.stack.test.ts) that are data or a procedure of their own: the
 * decision inputs that break an ingest rule, and a MySQL outage under a running worker.
 */
import assert from 'node:assert/strict';
import type { TopicKey } from '../../pipeline/topics.ts';
import type { PresenceEvent } from '../../processors/model/records.ts';
import { DLQ_HEADERS } from '../../topology/dlq.ts';
import { settings, WAIT_MS, type PoisonChecks } from './poison-checks.ts';
import type { OfflineUser, PoisonStack } from './poison-stack.ts';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const YEAR = 365 * DAY;

/** A decision input that breaks ingest rule `rule`: it goes to push.dlq naming the rule. */
export interface IngestRuleRow {
  readonly name: string;
  readonly topic: TopicKey;
  readonly rule: string;
  readonly value: (stack: PoisonStack, u: OfflineUser) => unknown;
}

export const INGEST_RULE_ROWS: IngestRuleRow[] = [
  { name: 'a negative seq', topic: 'persisted', rule: 'int_range', value: (stack, u) => stack.message(u.uid, 'poison', { seq: -1 }) },
  { name: 'a negative unread_cnt', topic: 'persisted', rule: 'int_range', value: (stack, u) => stack.message(u.uid, 'poison', { unread_cnt: -1 }) },
  { name: 'persisted_at 0', topic: 'persisted', rule: 'epoch_ms', value: (stack, u) => stack.message(u.uid, 'poison', { persisted_at: 0 }) },
  {
    name: 'persisted_at ten years ahead',
    topic: 'persisted',
    rule: 'future_skew',
    value: (stack, u) => stack.message(u.uid, 'poison', { persisted_at: Date.now() + 10 * YEAR }),
  },
  {
    name: 'persisted_at eight days old',
    topic: 'persisted',
    rule: 'past_skew',
    value: (stack, u) => stack.message(u.uid, 'poison', { persisted_at: Date.now() - 8 * DAY }),
  },
  { name: 'an empty msg_id', topic: 'persisted', rule: 'non_empty', value: (stack, u) => stack.message(u.uid, 'poison', { msg_id: '' }) },
  {
    name: 'a heartbeat ten minutes ahead',
    topic: 'presence',
    rule: 'future_skew',
    value: (_stack, u): PresenceEvent => ({ uid: u.uid, device_id: u.deviceId, kind: 'HEARTBEAT', conv_id: null, seq: null, at: Date.now() + 10 * MINUTE }),
  },
  {
    name: 'a READ with seq -1',
    topic: 'presence',
    rule: 'int_range',
    value: (_stack, u): PresenceEvent => ({ uid: u.uid, device_id: u.deviceId, kind: 'READ', conv_id: 'c1', seq: -1, at: Date.now() }),
  },
  {
    name: 'a device_id over its column (129)',
    topic: 'presence',
    rule: 'max_length',
    value: (_stack, u): PresenceEvent => ({ uid: u.uid, device_id: 'd'.repeat(129), kind: 'CONNECT', conv_id: null, seq: null, at: Date.now() }),
  },
  {
    name: 'a token over its column (513)',
    topic: 'tokens',
    rule: 'max_length',
    value: (stack, u) => stack.tokenReport(u, { device_id: `${u.deviceId}-2`, token: 'x'.repeat(513) }),
  },
  {
    name: 'a token reported_at 0',
    topic: 'tokens',
    rule: 'epoch_ms',
    value: (stack, u) => stack.tokenReport(u, { device_id: `${u.deviceId}-2`, reported_at: 0 }),
  },
  {
    name: 'quiet hours starting at minute 1440',
    topic: 'settings',
    rule: 'int_range',
    value: (_stack, u) => settings(u.uid, { quiet_hours: { start_minute: 1440, end_minute: 60 } }),
  },
];

/**
 * With MySQL refusing the worker's writes (`breakMysql`), a message's claim is retried (counted in
 * push_mysql_retries_total with `code`) and nothing is pushed; once MySQL takes writes again
 * (`repair`), that message is pushed exactly once and a message produced right then on the same
 * partition within 5 s, with no dead letter.
 */
export async function mysqlOutage(
  stack: PoisonStack,
  c: PoisonChecks,
  partition: number,
  breakMysql: () => Promise<unknown>,
  repair: () => Promise<unknown>,
  code: string,
): Promise<void> {
  const victim = stack.takeUser(partition, 'fcm');
  const claimRetries = () => stack.metricTotal('push_mysql_retries_total', new RegExp(`^(?=.*writer="im_push_task")(?=.*code="${code}")`));
  const retriesBefore = await claimRetries();
  const lettersBefore = c.dlq.records.length;
  let conv = '';
  await breakMysql();
  try {
    conv = (await stack.sendMessage(victim, 'mysql')).value.conv_id;
    // The fan-out runs fused in the decisions (no push.dispatch record): its claim's retries show it has the message.
    for (const deadline = Date.now() + WAIT_MS; (await claimRetries()) < retriesBefore + 2;) {
      assert.ok(Date.now() < deadline, `no im_push_task ${code} retries in push_mysql_retries_total within ${WAIT_MS} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.deepEqual(stack.pushesTo(victim, conv), [], 'nothing is pushed before the task is claimed');
  } finally {
    await repair();
  }
  const next = c.followUp(victim.partition);
  await stack.accepted(victim, conv, WAIT_MS);
  await next;
  assert.deepEqual(
    stack.pushesTo(victim, conv).map((r) => r.answer),
    ['accepted'],
    'pushed exactly once',
  );
  assert.deepEqual(
    c.dlq.records.slice(lettersBefore).map((r) => r.headers[DLQ_HEADERS.errorCode]),
    [],
    'a transient error sends nothing to the DLQ',
  );
}
