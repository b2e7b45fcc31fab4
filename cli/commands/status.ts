import { AssignerProtocol, Kafka, logLevel, type Admin } from 'kafkajs';
import { readInt, readString } from '../../common/config.ts';
import { readEndpoints } from '../../common/endpoints.ts';

export const statusHelp = `pushctl status [--app offline-push] [--metrics URL[,URL...]] [--json]

  the pipeline's consumer group: state, members with their assigned partitions, and per input
  topic the committed offsets, end offsets and lag (one line per stage's source topic); then, from
  each worker's /metrics (--metrics, else PUSH_STATUS_METRICS_URLS, else this host's
  PUSH_METRICS_PORT), the group's restarts by reason and its current restart backoff`;

/** Consecutive restarts from which status calls it a restart loop. */
const RESTART_LOOP = 3;

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
    const ends = new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, Number(p.high)]));
    const rows = partitions.map((p) => {
      const end = ends.get(p.partition) ?? 0;
      const at = Number(p.offset) < 0 ? 0 : Number(p.offset);
      return { partition: p.partition, committed: at, end, lag: Math.max(0, end - at) };
    });
    topics.push({ topic, partitions: rows, lag: rows.reduce((sum, r) => sum + r.lag, 0) });
  }
  return { groupId, state: group.state, members, topics };
}

/** One worker's restarts of an application, from its /metrics (topology/metrics.ts, sinks/metrics/pipeline-metrics.ts). */
export type RestartStatus =
  | { readonly url: string; readonly reachable: true; readonly restarts: number; readonly byCode: Record<string, number>; readonly consecutive: number; readonly backoffMs: number }
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
function parseSamples(text: string): Array<{ name: string; labels: Record<string, string>; value: number }> {
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

export function describeRestarts(r: RestartStatus): string {
  if (!r.reachable) return `  restarts: no worker metrics at ${r.url} (${r.error})`;
  if (r.restarts === 0) return `  restarts: none (${r.url})`;
  const codes = Object.entries(r.byCode).map(([code, n]) => `${code} ${n}`).join(', ');
  const loop = r.consecutive >= RESTART_LOOP ? '  RESTART LOOP' : '';
  return `  restarts: ${r.restarts} (${codes}), ${r.consecutive} in a row, backoff ${(r.backoffMs / 1000).toFixed(1)} s (${r.url})${loop}`;
}

function metricsUrls(args: string[]): string[] {
  const i = args.indexOf('--metrics');
  const listed = i >= 0 ? args[i + 1] : process.env.PUSH_STATUS_METRICS_URLS;
  if (listed) return listed.split(',').map((u) => u.trim()).filter(Boolean);
  return [`http://127.0.0.1:${readInt(process.env, 'PUSH_METRICS_PORT', 9464, { min: 1, max: 65535 })}/metrics`];
}

export async function statusCommand(args: string[]): Promise<number> {
  const i = args.indexOf('--app');
  const groupId = readString({ PUSH_APPLICATION_ID: i >= 0 ? args[i + 1] : process.env.PUSH_APPLICATION_ID }, 'PUSH_APPLICATION_ID', 'offline-push');
  const admin = new Kafka({ clientId: 'pushctl', brokers: readEndpoints().kafkaBrokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const [status, restarts] = await Promise.all([groupStatus(admin, groupId), restartStatus(metricsUrls(args), groupId)]);
    if (args.includes('--json')) {
      console.log(JSON.stringify({ ...status, restarts }, null, 2));
      return 0;
    }
    console.log(`group ${status.groupId}: ${status.state}, ${status.members.length} member(s)`);
    for (const m of status.members) {
      const parts = Object.entries(m.assignment).map(([t, ps]) => `${t}[${ps.join(',')}]`).join(' ');
      console.log(`  ${m.clientId} ${m.host} ${parts || '(no partitions)'}`);
    }
    for (const t of status.topics) {
      console.log(`  ${t.topic.padEnd(40)} lag ${String(t.lag).padStart(8)}  ${t.partitions.map((p) => `p${p.partition}:${p.lag}`).join(' ')}`);
    }
    for (const r of restarts) console.log(describeRestarts(r));
    return 0;
  } finally {
    await admin.disconnect();
  }
}
