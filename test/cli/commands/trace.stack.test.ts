/**
 * `pushctl trace` on the real stack: the pipeline runs a small scripted history (chaos/scenario.ts:
 * offline pushes, an online device that ACKs, quiet hours, a muted conversation, merge bursts, a
 * dead first token, a user without tokens, private mode), then `pushctl trace <uid> --json` must
 * give, for every user, exactly the outcome and the reason of every message on every device. The
 * expected timeline is built here from the scenario's users and categories alone, not from the
 * pipeline's output. The text output must read as sentences and never show a device token.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { startRun, type PipelineRun } from '../../../chaos/harness.ts';
import type { ScenarioUser } from '../../../chaos/scenario.ts';
import { eachConcurrently } from '../../support/concurrency.ts';
import { pushctl } from '../pushctl-process.ts';

interface Line {
  time: string;
  msg_id: string;
  conv_id: string;
  seq: number | null;
  device_id: string;
  stage: string;
  outcome: string;
  reason: string;
  vendor: string;
  merge: string;
  words: string;
}

/** One decision the trace must show: `msg|device|stage|outcome|reason|vendor|merge`. */
type Decision = string;
const decision = (msg: string, device: string, stage: string, outcome: string, reason: string, vendor: string, merge = ''): Decision =>
  [msg, device, stage, outcome, reason, vendor, merge].join('|');

/** The messages the scenario sends a user: (conv, seq) in order, as chaos/scenario.ts scripts them. */
function messagesOf(run: PipelineRun, uid: string): Array<{ msgId: string; conv: string; seq: number }> {
  return run.scenario.timeline
    .filter((r) => r.topic === 'persisted' && (r.value as { uid: string }).uid === uid)
    .map((r) => {
      const v = r.value as { msg_id: string; conv_id: string; seq: number };
      return { msgId: v.msg_id, conv: v.conv_id, seq: v.seq };
    });
}

/**
 * What the trace must say for one user, from the scenario's rules (docs/design.md,
 * "Nothing is lost; every ending is counted"): an online device ACKs (online-filter, online_ack);
 * quiet hours and mute are policy suppressions; a user with no device is dropped for no_token by
 * the online-filter; every other device is pushed on its first token, except a dead first token,
 * refused by its vendor before the second one is accepted; in a burst the first message is pushed
 * at once (leading), the middle one merged (or, should its window have closed, pushed), the last
 * one pushed as the update (trailing).
 */
function expectedFor(run: PipelineRun, user: ScenarioUser): { exact: Decision[]; either: Array<[Decision[], Decision[]]> } {
  const exact: Decision[] = [];
  const either: Array<[Decision[], Decision[]]> = [];
  for (const m of messagesOf(run, user.uid)) {
    const burst = m.conv.startsWith('b-');
    if (user.devices.length === 0) {
      exact.push(decision(m.msgId, '', 'online-filter', 'dropped', 'no_token', ''));
      continue;
    }
    for (const d of user.devices) {
      const pushed = (merge: string): Decision[] =>
        user.category === 'dead-first'
          ? [
              decision(m.msgId, d.deviceId, 'fan-out', 'dead_token', 'dead_token', d.tokens[0]!.vendor),
              decision(m.msgId, d.deviceId, 'fan-out', 'accepted', '', d.tokens[1]!.vendor, merge),
            ]
          : [decision(m.msgId, d.deviceId, 'fan-out', 'accepted', '', d.tokens[0]!.vendor, merge)];
      if (d.online) exact.push(decision(m.msgId, d.deviceId, 'online-filter', 'suppressed', 'online_ack', ''));
      else if (user.category === 'quiet') exact.push(decision(m.msgId, d.deviceId, 'policy', 'suppressed', 'dnd', ''));
      else if (user.category === 'muted') exact.push(decision(m.msgId, d.deviceId, 'policy', 'suppressed', 'mute', ''));
      else if (!burst) exact.push(...pushed(''));
      else if (m.seq === 1) either.push([pushed('leading'), pushed('')]);
      else if (m.seq === 2) either.push([[decision(m.msgId, d.deviceId, 'merge', 'merged', 'merged', '')], pushed('')]);
      else either.push([pushed('trailing'), pushed('')]);
    }
  }
  return { exact, either };
}

const DECISION_STAGES = new Set(['online-filter', 'merge', 'policy', 'fan-out']);

test('pushctl trace explains every message on every device of every user, exactly', { timeout: 300_000 }, async (t) => {
  let run: PipelineRun | undefined;
  try {
    run = await startRun({ instances: 1, partitions: 2, users: 12, messagesPerUser: 1, burstEvery: 3, durationMs: 6_000 });
    await run.play();
    await run.drain(120_000);
    // ClickHouse catches up with the emulators (the harness's own arrival check).
    const verdict = await run.verdict(60_000);
    assert.ok(verdict.arrival.exact, 'ClickHouse has every outcome');
  } catch (error) {
    await run?.close();
    throw error;
  }
  try {
    const users = run.scenario.users;
    const categories = new Set(users.map((u) => u.category));
    for (const c of ['offline', 'online', 'quiet', 'muted', 'dead-first', 'no-token', 'private'] as const) assert.ok(categories.has(c), `scenario lacks ${c}`);
    assert.ok(
      users.some((u) => messagesOf(run!, u.uid).some((m) => m.conv.startsWith('b-'))),
      'scenario has a merge burst',
    );
    const secrets = users.flatMap((u) => u.devices.flatMap((d) => d.tokens.map((tk) => tk.token)));

    // Four users at a time, each traced independently of the others: a user's trace is two pushctl
    // processes (mostly node's start-up, on the CPU), and a retry waits 2 s.
    await eachConcurrently(users, 4, async (user) => {
      const { exact, either } = expectedFor(run!, user);
      // The token lines and the ClickHouse sink are eventually consistent: a few tries while MySQL and ClickHouse settle.
      let lines: Line[] = [];
      let problem = '';
      for (let attempt = 0; attempt < 10; attempt++) {
        const out = await pushctl(['trace', user.uid, '--since', '1h', '--json']);
        assert.equal(out.code, 0, out.stderr);
        lines = out.stdout
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Line);
        let got = lines
          .filter((l) => DECISION_STAGES.has(l.stage))
          .map((l) => decision(l.msg_id, l.device_id, l.stage, l.outcome, l.reason, l.vendor, l.merge));
        // A burst's middle message is merged unless its window closed early (a stall): then every
        // message of the burst is pushed on its own and none is marked leading or trailing.
        const middleMerged = either.some(([a]) => a.some((x) => x.includes('|merge|merged|') && got.includes(x)));
        const want = [...exact, ...either.flatMap(([a, b]) => (middleMerged ? a : b))];
        if (either.length > 0 && !middleMerged) got = got.map((g) => g.replace(/\|(leading|trailing)$/, '|'));
        problem = '';
        const sortedGot = [...got].sort();
        const sortedWant = [...want].sort();
        if (JSON.stringify(sortedGot) !== JSON.stringify(sortedWant))
          problem = `decisions of ${user.uid} (${user.category}):\n got ${JSON.stringify(sortedGot, null, 1)}\nwant ${JSON.stringify(sortedWant, null, 1)}`;
        const deadDevices = user.category === 'dead-first' ? user.devices.map((d) => `${d.deviceId}|${d.tokens[0]!.vendor}`) : [];
        const invalidated = lines.filter((l) => l.stage === 'token').map((l) => `${l.device_id}|${l.vendor}`);
        if (!problem && JSON.stringify(invalidated.sort()) !== JSON.stringify(deadDevices.sort()))
          problem = `token invalidations of ${user.uid}: got ${JSON.stringify(invalidated)}, want ${JSON.stringify(deadDevices)}`;
        if (!problem) break;
        await new Promise((r) => setTimeout(r, 2000));
      }
      assert.equal(problem, '', problem);

      // One persisted line per message, before anything about it.
      const messages = messagesOf(run!, user.uid);
      assert.deepEqual(
        lines
          .filter((l) => l.stage === 'persisted')
          .map((l) => l.msg_id)
          .sort(),
        messages.map((m) => m.msgId).sort(),
      );
      for (const m of messages) {
        const first = lines.findIndex((l) => l.msg_id === m.msgId);
        assert.equal(lines[first]!.stage, 'persisted', `${m.msgId}: the persisted line comes first`);
      }
      // Receipts only ever confirm a push the trace shows as accepted.
      for (const r of lines.filter((l) => l.stage === 'receipt-join')) {
        assert.equal(r.outcome, 'delivered', JSON.stringify(r));
        assert.ok(
          lines.some((l) => l.outcome === 'accepted' && l.msg_id === r.msg_id && l.device_id === r.device_id && l.vendor === r.vendor),
          JSON.stringify(r),
        );
      }
      // The words say why, as a support engineer would tell the user.
      for (const l of lines) {
        if (l.reason === 'online_ack')
          assert.match(
            l.words,
            /^not pushed: the device was online (and acknowledged the message \d+ ms later \(its last heartbeat was \d+ ms before; a push waits up to \d+ ms for the acknowledgement\)|\(its last heartbeat was \d+ ms before\) and had acknowledged the message before the push service saw it)$/,
          );
        if (l.reason === 'dnd') assert.match(l.words, /quiet hours/);
        if (l.reason === 'mute') assert.match(l.words, /muted this conversation/);
        if (l.outcome === 'merged') assert.match(l.words, /merged into the notification for seq \d+ of this conversation/);
        if (l.merge === 'leading') assert.match(l.words, /first of a burst/);
        if (l.merge === 'trailing') assert.match(l.words, /update for the burst, sent when its merge window closed, covering the 1 message\(s\) merged/);
        if (l.outcome === 'accepted') assert.match(l.words, /^pushed: .+ accepted the notification/);
        if (l.outcome === 'dead_token') assert.match(l.words, /no longer valid/);
        if (l.stage === 'token') assert.match(l.words, /marked invalid/);
        for (const key of ['time', 'msg_id', 'conv_id', 'seq', 'device_id', 'stage', 'outcome', 'reason', 'vendor', 'merge', 'words'])
          assert.ok(key in l, `${key} missing`);
      }

      // Text: sentences, and no token (nor its full hash) anywhere.
      const text = await pushctl(['trace', user.uid, '--since', '1h']);
      assert.equal(text.code, 0, text.stderr);
      const textLines = text.stdout.trim().split('\n');
      assert.match(textLines[0]!, new RegExp(`^Trace of user ${user.uid} over the last 1h: ${messages.length} message\\(s\\)`));
      assert.equal(textLines.length, 1 + lines.length);
      for (const l of textLines.slice(1)) assert.match(l, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC {2}(\[[^\]]+\] )?[A-Z].*\.$/, l);
      for (const secret of secrets) {
        assert.ok(
          !text.stdout.includes(secret) && !text.stdout.includes(createHash('sha256').update(secret).digest('hex')),
          `${user.uid}: a token reached the text output`,
        );
      }
      if (user.category === 'online' || user.category === 'dead-first' || user.uid.endsWith('-u0')) t.diagnostic(`${user.category}:\n${text.stdout}`);
    });

    // --conv narrows to one conversation.
    const burstUser = users.find((u) => messagesOf(run!, u.uid).some((m) => m.conv.startsWith('b-')))!;
    const conv = `b-${burstUser.uid}`;
    const one = await pushctl(['trace', burstUser.uid, '--conv', conv, '--json']);
    assert.equal(one.code, 0, one.stderr);
    const convLines = one.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Line);
    assert.ok(convLines.length > 0 && convLines.every((l) => l.conv_id === conv), 'only the conversation asked for');
  } finally {
    await run.close();
  }
});
