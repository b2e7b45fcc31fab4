/**
 * Waiting for a pipeline to drain, from the outside: the committed and end offsets of every stage's
 * consumer group stop moving (under exactly-once a partition ends in commit markers, so lag alone
 * never reaches 0) and the caller's own signals are quiet.
 */
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { readEndpoints } from '../common/endpoints.ts';
import { groupStatus, type GroupStatus } from '../cli/commands/status.ts';
import { STAGES } from '../pipeline/stages.ts';

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** An admin client of the stack's broker (retries through a broker restart). */
export function chaosAdmin(): Admin {
  return new Kafka({ clientId: 'chaos-admin', brokers: readEndpoints().kafkaBrokers, logLevel: logLevel.NOTHING, retry: { retries: 20, maxRetryTime: 5000 } }).admin();
}

/** Every stage group's status (members, assignment, offsets). */
export async function stageStatuses(admin: Admin, applicationId: string): Promise<GroupStatus[]> {
  const out: GroupStatus[] = [];
  for (const stage of STAGES) out.push(await groupStatus(admin, `${applicationId}-${stage}`));
  return out;
}

function snapshot(statuses: readonly GroupStatus[]): string {
  const parts: string[] = [];
  for (const s of statuses) for (const t of s.topics) for (const p of t.partitions) parts.push(`${s.groupId}/${t.topic}/${p.partition}=${p.committed}/${p.end}`);
  return parts.sort().join(',');
}

/**
 * Resolves once the offsets snapshot is the same on two reads `intervalMs` apart, every group is
 * Stable, and `quiet()` holds; rejects after `timeoutMs`.
 */
export async function waitDrained(applicationId: string, quiet: () => boolean, options: { intervalMs?: number; timeoutMs?: number } = {}): Promise<void> {
  const admin = chaosAdmin();
  await admin.connect();
  const deadline = Date.now() + (options.timeoutMs ?? 300_000);
  try {
    let previous = '';
    for (;;) {
      await sleep(options.intervalMs ?? 2000);
      let current = '';
      try {
        const statuses = await stageStatuses(admin, applicationId);
        current = statuses.every((s) => s.state === 'Stable') ? snapshot(statuses) : '';
      } catch {
        current = '';
      }
      if (current !== '' && current === previous && quiet()) return;
      if (Date.now() > deadline) throw new Error(`pipeline ${applicationId} did not drain within ${options.timeoutMs ?? 300_000} ms`);
      previous = current;
    }
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** Partitions per member of one group: `{ clientId/memberId: ['topic:0', ...] }` (the first stage source's topics). */
export function assignmentOf(status: GroupStatus): Record<string, string[]> {
  return Object.fromEntries(status.members.map((m) => [m.memberId, Object.entries(m.assignment).flatMap(([t, ps]) => ps.map((p) => `${t}:${p}`)).sort()]));
}
