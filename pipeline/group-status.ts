/**
 * The state of a running pipeline as operators and harnesses read it: the consumer group's members,
 * assignments and lag per input partition, and each worker's restarts from its /metrics. Printed by
 * `pushctl status`; polled by the benchmark, the chaos run and the scaling tests.
 */
import { AssignerProtocol, type Admin } from 'kafkajs';

export interface TopicLag {
  readonly topic: string;
  readonly partitions: Array<{ partition: number; committed: number; end: number; lag: number }>;
  readonly lag: number;
}

export interface GroupStatus {
  readonly groupId: string;
  readonly state: string;
  readonly members: Array<{ memberId: string; clientId: string; host: string; assignment: Record<string, number[]> }>;
  readonly topics: TopicLag[];
}

/** The group's state, members with their assigned partitions, and committed offset, end offset and lag per partition. */
export async function groupStatus(admin: Admin, groupId: string): Promise<GroupStatus> {
  const { groups } = await admin.describeGroups([groupId]);
  const group = groups[0]!;
  const members = group.members.map((m) => {
    const decoded = m.memberAssignment.length > 0 ? AssignerProtocol.MemberAssignment.decode(m.memberAssignment) : null;
    return { memberId: m.memberId, clientId: m.clientId, host: m.clientHost, assignment: decoded?.assignment ?? {} };
  });
  const committed = await admin.fetchOffsets({ groupId });
  const topics: TopicLag[] = [];
  for (const { topic, partitions } of committed) {
    // The admin lists offsets read_committed: `high` is the last stable offset, so records of open
    // transactions are not lag yet. The stages commit past transaction markers (topology/task-input.ts),
    // so a caught-up group's committed offset is the end. Records before `low` are deleted: not lag.
    const offsets = new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, { end: Number(p.high), low: Number(p.low) }]));
    const rows = partitions.map((p) => {
      const { end, low } = offsets.get(p.partition) ?? { end: 0, low: 0 };
      const at = Number(p.offset) < 0 ? 0 : Number(p.offset);
      return { partition: p.partition, committed: at, end, lag: Math.max(0, end - Math.max(at, low)) };
    });
    topics.push({ topic, partitions: rows, lag: rows.reduce((sum, r) => sum + r.lag, 0) });
  }
  return { groupId, state: group.state, members, topics };
}

/** One worker's restarts of an application, from its /metrics (topology/metrics.ts, sinks/metrics/pipeline-metrics.ts). */
export type RestartStatus =
  | {
      readonly url: string;
      readonly reachable: true;
      readonly restarts: number;
      readonly byCode: Record<string, number>;
      readonly consecutive: number;
      readonly backoffMs: number;
    }
  | { readonly url: string; readonly reachable: false; readonly error: string };

/** Reads `push_app_restarts_total`, `push_app_consecutive_restarts` and `push_app_restart_backoff_ms` of `app` from each worker. */
export async function restartStatus(urls: readonly string[], app: string): Promise<RestartStatus[]> {
  return Promise.all(
    urls.map(async (url): Promise<RestartStatus> => {
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
        if (!res.ok) return { url, reachable: false, error: `HTTP ${res.status}` };
        const byCode: Record<string, number> = {};
        let consecutive = 0;
        let backoffMs = 0;
        for (const { name, labels, value } of parseSamples(await res.text())) {
          if (labels.app !== app) continue;
          if (name === 'push_app_restarts_total') byCode[labels.code ?? ''] = value;
          else if (name === 'push_app_consecutive_restarts') consecutive = value;
          else if (name === 'push_app_restart_backoff_ms') backoffMs = value;
        }
        return { url, reachable: true, restarts: Object.values(byCode).reduce((a, b) => a + b, 0), byCode, consecutive, backoffMs };
      } catch (error) {
        return { url, reachable: false, error: (error as Error).message };
      }
    }),
  );
}

/** Samples of the Prometheus text format (no timestamps; the project's registry writes none). */
export function parseSamples(text: string): Array<{ name: string; labels: Record<string, string>; value: number }> {
  const samples: Array<{ name: string; labels: Record<string, string>; value: number }> = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_x, c: string) => (c === 'n' ? '\n' : c));
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}
