/**
 * What the poison suite asserts, as a user of the pipeline's topics, emulators and tables would
 * check it: the dead letter of a produced record, an outcome, a receipt matched, a token left
 * alone, and the follow-up message that shows a partition still moves.
 */
import assert from 'node:assert/strict';
import type { RowDataPacket } from 'mysql2/promise';
import { receiptsByMessageTopic, receiptsByUidTopic } from '../../pipeline/apps/receipts.ts';
import { recipientParam } from '../../processors/model/receipt-route.ts';
import type { PushReceipt, ReceiptRaw } from '../../processors/receipt-join/records.ts';
import type { PushOutcome, TokenReport, UserSettings } from '../../processors/model/records.ts';
import type { Vendor } from '../../processors/fan-out/vendor-port.ts';
import { DLQ_HEADERS } from '../../topology/dlq.ts';
import { receiptBodies } from '../receipts/support.ts';
import type { Follower, OfflineUser, PoisonStack, Produced, SeenRecord } from './poison-stack.ts';

/**
 * How soon a message produced right after a poison must reach its vendor (the target of
 * docs/design.md, "Targets").
 */
export const FOLLOW_UP_LIMIT_MS = 5_000;
/** How long any single expectation is waited for. */
export const WAIT_MS = 20_000;

/** A dead letter's source is the produced record. */
export const sameSource = (p: Produced) => (r: SeenRecord<Buffer>) =>
  r.headers[DLQ_HEADERS.sourceTopic] === p.topic &&
  r.headers[DLQ_HEADERS.sourcePartition] === String(p.partition) &&
  r.headers[DLQ_HEADERS.sourceOffset] === p.offset;

/** The dead letter names the ingest rule (docs/design.md, "Ingest validation"). */
export function assertBreaksRule(letter: SeenRecord<Buffer>, rule: string): void {
  assert.equal(letter.headers[DLQ_HEADERS.errorCode], 'CONTRACT_VIOLATION', letter.headers[DLQ_HEADERS.errorMessage]);
  assert.match(letter.headers[DLQ_HEADERS.errorMessage] ?? '', new RegExp(`breaks ingest rule ${rule}:`));
}

/** Valid settings for `uid` (UTC, nothing muted), stamped a second ago. */
export function settings(uid: string, extra: Partial<UserSettings> = {}): UserSettings {
  return { uid, time_zone: 'UTC', quiet_hours: null, muted_conversations: [], private_mode: false, updated_at: Date.now() - 1000, ...extra };
}

/** An HMS receipt callback body (status 0 delivered, 2 dead token). */
export const hmsCallback = (requestId: string, token: string, status: number, timestamp: number) => receiptBodies.hms(requestId, token, status, timestamp);

export async function postReceipt(port: number, path: string, body: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  const answer = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers, body });
  return { status: answer.status, body: await answer.text() };
}

export class PoisonChecks {
  /** Produce-to-vendor times of every follow-up, ms. */
  readonly followUpMs: number[] = [];

  private constructor(
    readonly stack: PoisonStack,
    readonly dlq: Follower<Buffer>,
    readonly outcomes: Follower<PushOutcome>,
    readonly receipts: Follower<PushReceipt>,
    readonly tokenReports: Follower<TokenReport>,
    readonly rawReceipts: Follower<ReceiptRaw>,
  ) {}

  /** Starts following push.dlq, push.outcomes, push.receipts, push.tokens and push.receipts.raw. */
  static async open(stack: PoisonStack): Promise<PoisonChecks> {
    return new PoisonChecks(
      stack,
      await stack.follow('dlq'),
      await stack.follow('outcomes'),
      await stack.follow('receipts'),
      await stack.follow('tokens'),
      await stack.follow('receiptsRaw'),
    );
  }

  /** Produces a message to a fresh offline user on `partition` and asserts it reaches its vendor within 5 s of being produced. */
  async followUp(partition: number, vendor?: Vendor): Promise<{ user: OfflineUser; conv: string }> {
    const user = this.stack.takeUser(partition, vendor);
    const { value, produced } = await this.stack.sendMessage(user, 'follow-up');
    const got = await this.stack.accepted(user, value.conv_id, WAIT_MS);
    const ms = got.at - produced.at;
    this.followUpMs.push(ms);
    assert.ok(
      ms <= FOLLOW_UP_LIMIT_MS,
      `the follow-up on partition ${partition} reached ${user.vendor} ${ms} ms after it was produced (limit ${FOLLOW_UP_LIMIT_MS} ms)`,
    );
    return { user, conv: value.conv_id };
  }

  /** The dead letter `stage` wrote for the produced record. */
  deadLetterOf(p: Produced, stage = 'decisions'): Promise<SeenRecord<Buffer>> {
    const app = `${this.stack.env.applicationId}-${stage}`;
    return this.dlq.waitFor(
      (r) => sameSource(p)(r) && r.headers[DLQ_HEADERS.applicationId] === app,
      WAIT_MS,
      `the ${stage} dead letter of ${p.topic}/${p.partition}/${p.offset}`,
    );
  }

  /** The outcome the pipeline wrote for `uid`'s message in `conv`, with `status`. */
  outcomeOf(uid: string, conv: string, status: string): Promise<SeenRecord<PushOutcome>> {
    return this.outcomes.waitFor(
      (r) => r.value?.uid === uid && r.value.conv_id === conv && r.value.status === status,
      WAIT_MS,
      `${status} outcome of ${uid}/${conv}`,
    );
  }

  /** An HMS callback about a push to `user`, as Push Kit sends it: with the push's bi_tag, which names the user (processors/model/receipt-route.ts). */
  hmsCallbackAbout(requestId: string, user: OfflineUser, status: number, timestamp: number): string {
    return receiptBodies.hms(requestId, user.token, status, timestamp, recipientParam(user.uid) ?? '');
  }

  /** A delivered, matched receipt for the task. */
  deliveredReceipt(taskId: string, what: string): Promise<SeenRecord<PushReceipt>> {
    return this.receipts.waitFor((r) => r.value?.task_id === taskId && r.value.status === 'DELIVERED' && r.value.matched, WAIT_MS, what);
  }

  /** The receipts stage has read everything now on push.receipts.raw and then on its repartition topics (so the joins saw it). */
  async receiptsCaughtUp(): Promise<void> {
    await this.stack.waitRead('receipts', [this.stack.topic('receiptsRaw')]);
    const prefix = this.stack.env.topicPrefix;
    await this.stack.waitRead('receipts', [receiptsByMessageTopic(prefix), receiptsByUidTopic(prefix)], { markers: true });
  }

  /** Sends `user` a message; once its vendor's own receipt matched it, returns its vendor message id and task. */
  async deliveredPush(user: OfflineUser): Promise<{ requestId: string; taskId: string }> {
    const { value } = await this.stack.sendMessage(user, 'receipted');
    const accepted = await this.outcomeOf(user.uid, value.conv_id, 'ACCEPTED');
    await this.deliveredReceipt(accepted.value.task_id, `the vendor's delivered receipt for ${value.conv_id}`);
    return { requestId: accepted.value.vendor_message_id!, taskId: accepted.value.task_id };
  }

  /** A receipt did nothing to the user: no receipt but the vendor's delivered one, no invalidation, and the next message goes to the same token. */
  async assertTokenUntouched(user: OfflineUser, requestId: string): Promise<void> {
    await this.receiptsCaughtUp();
    assert.deepEqual(
      this.receipts.records.filter((r) => r.value?.vendor_message_id === requestId && r.value.status !== 'DELIVERED').map((r) => r.value.status),
      [],
      "no receipt other than the vendor's delivered one",
    );
    assert.deepEqual(
      this.tokenReports.records.filter((r) => r.value?.device_id === user.deviceId && r.value.state === 'INVALID').map((r) => r.value.reason),
      [],
      'the token was not invalidated',
    );
    const [rows] = await this.stack.mysql.pool.query<Array<{ status: number } & RowDataPacket>>(
      'SELECT status FROM im_push_token WHERE device_id = ? AND vendor = ?',
      [user.deviceId, user.vendor],
    );
    assert.deepEqual(
      rows.map((r) => r.status),
      [1],
      'im_push_token holds the token as valid',
    );
    const { value } = await this.stack.sendMessage(user, 'after-receipt');
    await this.stack.accepted(user, value.conv_id, WAIT_MS);
  }
}
