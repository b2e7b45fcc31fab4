/**
 * The chaos run in short (the full one is `npm run chaos`): two worker processes SIGKILLed at
 * random points and restarted (a takeover re-sends only calls without a recorded answer), MySQL and ClickHouse cut off through the run's own forwarders,
 * vendor 429 / 5xx / GOAWAY / expired-auth / slow storms, and 1,000 malformed inputs, while a
 * scripted workload flows. The shared Kafka broker is never restarted here (other tests use it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runChaos, type ChaosReport } from '../../chaos/chaos.ts';
import { formatChaosReport } from '../../chaos/report.ts';

test(
  'under worker kills, store outages, vendor storms and malformed input: nothing lost, no visible duplicate, exact arrival, DLQ with reasons',
  { timeout: 420_000 },
  async (t) => {
    const report: ChaosReport = await runChaos({
      instances: 2,
      users: 200,
      messagesPerUser: 3,
      durationMs: 40_000,
      kills: 2,
      malformed: 1000,
      mysqlOutageMs: 8000,
      clickhouseOutageMs: 10_000,
      brokerRestart: false,
      storms: true,
      seed: 11,
      arrivalWaitMs: 40_000,
    });
    t.diagnostic(formatChaosReport(report));
    const { verdict: v, summary: s } = report;

    assert.deepEqual(report.crashes, [], 'workers exited on their own');
    assert.deepEqual(v.stuckPartitions, [], 'stage partitions that stalled and never caught up');
    assert.deepEqual(v.outcomes.missing, [], 'inputs without any outcome');
    assert.deepEqual(v.outcomes.conflicting, [], 'inputs that ended in more than one class');
    assert.equal(v.pushes.lost.length, report.failedNotLost, `pushes lost without a FAILED outcome: ${v.pushes.lost.join(', ')}`);
    assert.equal(v.pushes.duplicatesSharingCollapseId, v.pushes.duplicates, 'a duplicate push carried another collapse id');
    assert.deepEqual(v.pushes.unexpected, [], 'pushes that should not have gone out');
    assert.deepEqual(v.pushes.summaryLeaks, []);
    assert.ok(s.noHotRetryLoop, `a push was retried before the vendor's Retry-After: ${JSON.stringify(report.storms)}`);
    // A takeover calls again only what had no answer recorded on its task row when the worker died.
    assert.equal(
      report.takeovers.resentAlthoughRecorded,
      0,
      `pushes re-sent after a takeover although their answer was recorded, e.g. ${report.takeovers.examples.join(', ')}`,
    );
    assert.ok(
      report.takeovers.resent <= report.takeovers.withoutRecordedAnswer,
      `${report.takeovers.resent} re-sends after takeover > ${report.takeovers.withoutRecordedAnswer} calls without a recorded answer at the kill`,
    );

    // Every malformed input in the DLQ once, with the reason of its kind.
    const sent = report.inputs.malformed;
    assert.equal(v.deadLetters.distinct, v.deadLetters.total, 'a malformed input dead-lettered twice');
    assert.equal(v.deadLetters.byCode.DLQ_BAD_FRAMING ?? 0, sent.garbage);
    assert.equal(v.deadLetters.byCode.UNKNOWN_SCHEMA_ID ?? 0, sent['unknown-schema-id']);
    assert.ok((v.deadLetters.byCode.DESERIALIZATION_FAILED ?? 0) >= sent['wrong-record'] + sent.truncated);
    assert.equal(
      report.malformedInDlq,
      Object.values(sent).reduce((a, b) => a + b, 0),
      `contract-breaking values that were processed instead of dead-lettered: ${v.outcomes.foreign} outcomes`,
    );

    assert.ok(v.arrival.exact, `arrival per vendor, ClickHouse vs emulators: ${JSON.stringify(v.arrival.byVendor)}`);
  },
);
