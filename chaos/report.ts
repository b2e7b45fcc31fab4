/**
 * The chaos run's report: a JSON file with every figure, and a readable summary.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDir, stackPath } from '../stack/paths.ts';
import type { ChaosReport } from './chaos.ts';
import { MILESTONE_TIMEOUT_MS, type ClusterFigures } from './cluster-faults.ts';

const yes = (ok: boolean) => (ok ? 'yes' : 'NO');

export function formatChaosReport(r: ChaosReport): string {
  const v = r.verdict;
  const lines: string[] = [];
  const malformedTotal = Object.values(r.inputs.malformed).reduce((a, b) => a + b, 0);
  lines.push(`=== offline-push chaos run ${r.run} (${r.wallSeconds} s) ===`);
  lines.push(`inputs            ${r.inputs.messages} persisted messages (${r.inputs.timelineRecords} timeline records), ${malformedTotal} malformed`);
  lines.push(`faults            ${summarizeFaults(r)}`);
  lines.push('');
  lines.push(
    `expected pushes   ${v.pushes.expected}, delivered ${v.pushes.delivered}, not delivered ${v.pushes.lost.length} (of which ended FAILED after bounded retries, replayable: ${r.failedNotLost}; without any outcome: ${v.pushes.lost.length - r.failedNotLost})`,
  );
  lines.push(`burst middles     ${v.pushes.optionalDelivered} pushed as a trailing update because a stall closed their merge window early (same collapse id)`);
  lines.push(`other channel     ${v.pushes.viaOtherChannel.length} delivered through another of the device's tokens (fallback after a refusal)`);
  lines.push(
    `duplicated        ${v.pushes.duplicates} extra copies, ${v.pushes.duplicatesSharingCollapseId} of them with the same collapse id (device replaces)`,
  );
  const tk = r.takeovers;
  lines.push(
    `takeovers         ${tk.kills} SIGKILLs: re-sends after takeover ${tk.resent}; vendor calls without a recorded answer at the kill ${tk.withoutRecordedAnswer} (the vendor had answered ${tk.answeredByVendorUnrecorded} of them before the kill: the answer on its way back or being written); re-sent although recorded ${tk.resentAlthoughRecorded}${tk.examples.length ? ` e.g. ${tk.examples.join(', ')}` : ''}; by kill ${tk.byKill.map((k) => `${k.resent}/${k.withoutRecordedAnswer}`).join(', ') || '-'}`,
  );
  lines.push(
    `unexpected        ${v.pushes.unexpected.length} pushes the scenario suppresses; wrong collapse id ${v.pushes.wrongCollapseId.length}; private summary leaks ${v.pushes.summaryLeaks.length}`,
  );
  lines.push(
    `outcome classes   ${v.outcomes.asExpected}/${v.outcomes.inputs} inputs as expected; missing ${v.outcomes.missing.length}, more than one class ${v.outcomes.conflicting.length}, other class ${v.outcomes.mismatched.length}`,
  );
  lines.push(
    `                  ${Object.entries(v.outcomes.byClass)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
  );
  lines.push(`outcomes about inputs outside the scenario (malformed values that were processed): ${v.outcomes.foreign}`);
  lines.push(
    `DLQ               ${v.deadLetters.total} records, ${v.deadLetters.distinct} distinct inputs; malformed inputs in the DLQ ${r.malformedInDlq}/${malformedTotal}`,
  );
  lines.push(
    `  by reason       ${
      Object.entries(v.deadLetters.byCode)
        .sort()
        .map(([k, n]) => `${k} ${n}`)
        .join(', ') || '(none)'
    }`,
  );
  lines.push(
    `  sent by kind    ${Object.entries(r.inputs.malformed)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
  );
  lines.push(
    `vendor refusals   ${
      Object.entries(v.failures)
        .sort()
        .map(([k, n]) => `${k} ${n}`)
        .join(', ') || '(none)'
    }`,
  );
  lines.push(`arrival exact     ${yes(v.arrival.exact)} (ClickHouse vs emulators' recordings, submitted/arrived per vendor)`);
  for (const [vendor, a] of Object.entries(v.arrival.byVendor)) {
    lines.push(
      `  ${vendor.padEnd(7)} clickhouse ${a.clickhouse.arrived}/${a.clickhouse.submitted}   emulators ${a.emulators.arrived}/${a.emulators.submitted}`,
    );
  }
  lines.push('vendor storms     (requests, refused, min gap refusal→retry of the same push, too early, max requests per push)');
  for (const s of r.storms) {
    lines.push(
      `  ${s.vendor.padEnd(7)} ${s.fault.padEnd(24)} ${String(s.requests).padStart(5)} ${String(s.refused).padStart(5)}  ${s.minRetryGapMs === null ? '   -' : `${s.minRetryGapMs} ms`}  too early ${s.tooEarly}  max/push ${s.maxRequestsPerPush}${s.examples.length ? ` e.g. ${s.examples.map((e) => `${e.answer}→${e.gapMs} ms→${e.nextAnswer}`).join('; ')}` : ''}`,
    );
  }
  lines.push(`stalled partitions ${v.stuckPartitions.length}${v.stuckPartitions.map((p) => ` [${p.group} ${p.topic}:${p.partition} lag ${p.lag}]`).join('')}`);
  lines.push(
    `worker crashes    ${r.crashes.length}${r.crashes.map((c) => ` [worker ${c.worker} at +${(c.atMs / 1000).toFixed(0)} s: code ${c.code} signal ${c.signal}]`).join('')}`,
  );
  if (r.cluster) lines.push(...formatClusterFigures(r.cluster));
  lines.push('');
  const s = r.summary;
  lines.push(
    `nothing lost ${yes(s.nothingLost)} | no visible duplicate ${yes(s.noVisibleDuplicate)} | one class per input ${yes(s.everyInputOneClass)} | arrival exact ${yes(s.arrivalExact)} | no hot retry loop ${yes(s.noHotRetryLoop)} | malformed all in DLQ ${yes(s.malformedAllInDlq)} | re-sends ≤ unanswered at kills ${yes(s.takeoverResendsBounded)} | no crash ${yes(s.noCrash)}${s.clusterRecovered === undefined ? '' : ` | cluster recovered ${yes(s.clusterRecovered)}`}`,
  );
  return lines.join('\n');
}

const secs = (ms: number | null) => (ms === null ? `NOT within ${MILESTONE_TIMEOUT_MS / 1000} s` : `${(ms / 1000).toFixed(1)} s`);

const byStage = (c: Record<string, number | null>) =>
  Object.entries(c)
    .map(([stage, ms]) => `${stage} ${secs(ms)}`)
    .join(', ');

function formatClusterFigures(c: ClusterFigures): string[] {
  const lines = [
    `replication       ${c.replication.topics} topics checked (the run's and Kafka's offsets and transaction state); not as configured: ${c.replication.offenders.length === 0 ? 'none' : c.replication.offenders.join('; ')}`,
  ];
  const b = c.brokerLoss;
  if (b)
    lines.push(
      `broker loss       broker ${b.broker}${b.wasController ? ' (active controller)' : ''}, leader of ${b.partitionsLed} run partitions, SIGKILLed, down ${secs(b.downMs)}`,
      `  leaders moved   ${secs(b.leadersMovedMs)} after the kill; stages caught up with the inputs at the kill ${secs(b.caughtUpMs)} (${byStage(b.caughtUpByStage)})`,
      `  restart         answering ${secs(b.restartMs)} after its start; ISR whole ${secs(b.isrWholeMs)}, stages caught up ${secs(b.caughtUpAfterRestartMs)} after it`,
    );
  const a = c.reassignment;
  if (a)
    lines.push(
      `reassignment      ${a.partitions} partitions: leader replica dropped ${secs(a.dropPhaseMs)} (every leader moved ${secs(a.leadersMovedMs)}), added back ${secs(a.addPhaseMs)}, ISR whole ${secs(a.isrWholeMs)} after that`,
      `  caught up       ${secs(a.caughtUpMs)} after the reassignment started (${byStage(a.caughtUpByStage)})`,
    );
  for (const e of c.errors) lines.push(`cluster fault failed: ${e}`);
  return lines;
}

function summarizeFaults(r: ChaosReport): string {
  const counts = new Map<string, number>();
  for (const f of r.faults) if (!/-end$|-up$|^restart$|^traffic-done$|^malformed$/.test(f.kind)) counts.set(f.kind, (counts.get(f.kind) ?? 0) + 1);
  return [...counts].map(([k, n]) => `${k} ×${n}`).join(', ');
}

/** Writes `<dir>/chaos-<run>.json` and `.txt`; returns their paths. Default dir `.stack/chaos`. */
export function writeChaosReport(r: ChaosReport, dir = ensureDir(stackPath('chaos'))): { json: string; text: string } {
  const json = join(dir, `chaos-${r.run}.json`);
  const text = join(dir, `chaos-${r.run}.txt`);
  // Lists of keys are capped so the file stays readable; the counts are complete.
  const capped = {
    ...r,
    verdict: {
      ...r.verdict,
      pushes: {
        ...r.verdict.pushes,
        lostCount: r.verdict.pushes.lost.length,
        lost: r.verdict.pushes.lost.slice(0, 50),
        unexpectedCount: r.verdict.pushes.unexpected.length,
        unexpected: r.verdict.pushes.unexpected.slice(0, 50),
        viaOtherChannel: r.verdict.pushes.viaOtherChannel.slice(0, 50),
      },
      outcomes: {
        ...r.verdict.outcomes,
        missingCount: r.verdict.outcomes.missing.length,
        conflictingCount: r.verdict.outcomes.conflicting.length,
        mismatchedCount: r.verdict.outcomes.mismatched.length,
        missing: r.verdict.outcomes.missing.slice(0, 50),
        conflicting: r.verdict.outcomes.conflicting.slice(0, 50),
        mismatched: r.verdict.outcomes.mismatched.slice(0, 50),
      },
    },
  };
  writeFileSync(json, `${JSON.stringify(capped, null, 2)}\n`);
  writeFileSync(
    text,
    `${formatChaosReport(r)}\n\nfault timeline:\n${r.faults.map((f) => `  +${(f.atMs / 1000).toFixed(1).padStart(6)} s  ${f.kind.padEnd(18)} ${f.detail}`).join('\n')}\n`,
  );
  return { json, text };
}
