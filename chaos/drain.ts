/**
 * Waiting for a pipeline to drain, from the outside: the committed and end offsets of every stage's
 * consumer group stop moving (under exactly-once a partition ends in commit markers, so lag alone
 * never reaches 0) and the caller's own signals are quiet.
 */
import type { Admin } from 'kafkajs';
import { kafkaClient } from '../common/kafka-client.ts';
import { readEndpoints } from '../common/endpoints.ts';
import { errorMessage } from '../common/errors.ts';
import { groupStatus, type GroupStatus } from '../pipeline/group-status.ts';
import { deployedStages } from '../pipeline/worker-config.ts';

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** An admin client of the stack's broker (retries through a broker restart). */
export function chaosAdmin(): Admin {
  return kafkaClient(readEndpoints(), {
    clientId: 'chaos-admin',
    retry: { retries: 20, maxRetryTime: 5000 },
  }).admin();
}

/**
 * Every stage group's status (members, assignment, offsets); `stages`: those the deployment runs
 * (default: those a worker with this process's environment runs, `deployedStages`).
 */
export async function stageStatuses(admin: Admin, applicationId: string, stages: readonly string[] = deployedStages()): Promise<GroupStatus[]> {
  const out: GroupStatus[] = [];
  for (const stage of stages) out.push(await groupStatus(admin, `${applicationId}-${stage}`));
  return out;
}

function snapshot(statuses: readonly GroupStatus[]): string {
  const parts: string[] = [];
  for (const s of statuses)
    for (const t of s.topics) for (const p of t.partitions) parts.push(`${s.groupId}/${t.topic}/${p.partition}=${p.committed}/${p.end}`);
  return parts.sort().join(',');
}

/** A partition whose group stopped short of its end (more than markers and aborted batches left). */
export interface StuckPartition {
  readonly group: string;
  readonly topic: string;
  readonly partition: number;
  readonly lag: number;
}

/** Lag a drained exactly-once partition may keep: commit markers and aborted records no one reads. */
const MARKER_LAG = 10;

/**
 * Resolves once the offsets snapshot is the same on two reads `intervalMs` apart, every group is
 * Stable, `quiet()` holds, and no partition lags by more than its trailing markers. A pipeline that
 * is stable while a partition still lags (a stalled task) is waited for `stuckGraceMs` more and then
 * reported: the promise resolves with the partitions still behind. Rejects after `timeoutMs`.
 */
export async function waitDrained(
  applicationId: string,
  quiet: () => boolean,
  options: { intervalMs?: number; timeoutMs?: number; stuckGraceMs?: number; stages?: readonly string[] } = {},
): Promise<StuckPartition[]> {
  const admin = chaosAdmin();
  await admin.connect();
  const deadline = Date.now() + (options.timeoutMs ?? 300_000);
  try {
    let previous = '';
    let stableSince: number | undefined;
    let statusError: string | undefined;
    for (;;) {
      await sleep(options.intervalMs ?? 2000);
      let current = '';
      let behind: StuckPartition[] = [];
      try {
        const statuses = await stageStatuses(admin, applicationId, options.stages);
        current = statuses.every((s) => s.state === 'Stable') ? snapshot(statuses) : '';
        behind = statuses.flatMap((s) =>
          s.topics.flatMap((t) =>
            t.partitions.filter((p) => p.lag > MARKER_LAG).map((p) => ({ group: s.groupId, topic: t.topic, partition: p.partition, lag: p.lag })),
          ),
        );
        statusError = undefined;
      } catch (error) {
        // The groups cannot be read now (a broker restarting): not stable yet, asked again; a timeout names the error.
        current = '';
        statusError = errorMessage(error);
      }
      if (current !== '' && current === previous && quiet()) {
        stableSince ??= Date.now();
        if (behind.length === 0 || Date.now() - stableSince >= (options.stuckGraceMs ?? 60_000)) return behind;
      } else {
        stableSince = undefined;
      }
      if (Date.now() > deadline)
        throw new Error(
          `pipeline ${applicationId} did not drain within ${options.timeoutMs ?? 300_000} ms${statusError === undefined ? '' : ` (last status read failed: ${statusError})`}`,
        );
      previous = current;
    }
  } finally {
    // Best-effort: the drain's verdict (or its error) is already decided; a failed disconnect changes nothing.
    await admin.disconnect().catch(() => undefined);
  }
}

/** Partitions per member of one group: `{ clientId/memberId: ['topic:0', ...] }` (the first stage source's topics). */
export function assignmentOf(status: GroupStatus): Record<string, string[]> {
  return Object.fromEntries(
    status.members.map((m) => [
      m.memberId,
      Object.entries(m.assignment)
        .flatMap(([t, ps]) => ps.map((p) => `${t}:${p}`))
        .sort(),
    ]),
  );
}
