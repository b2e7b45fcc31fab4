import type { Admin } from 'kafkajs';
import { kafkaClient } from '../../common/kafka-client.ts';
import { readKey } from '../../common/config.ts';
import { CONFIG_KEYS } from '../../common/config-keys.ts';
import { readEndpoints } from '../../common/endpoints.ts';
import { groupStatus, restartStatus, type GroupStatus, type RestartStatus } from '../../pipeline/group-status.ts';
import { appsVersions, describeVersions } from '../../pipeline/apps-fleet.ts';
import { STAGES } from '../../pipeline/apps/index.ts';
import { UsageError } from '../args.ts';

export const statusHelp = `pushctl status [--app offline-push] [--stage ${STAGES.join('|')}] [--metrics URL[,URL...]] [--json]

  every stage group of the application (<app>-<stage>, the groups pushctl run starts: ${STAGES.join(', ')}):
  state, members with their assigned partitions, and per input topic the committed offsets, end
  offsets and lag (records not yet consumed; commit markers are consumed past, so a caught-up group
  shows 0); then, from each worker's /metrics (--metrics, else PUSH_STATUS_METRICS_URLS, else this
  host's PUSH_METRICS_PORT), the group's restarts by reason and its current restart backoff, and
  the version of the apps file (PUSH_APPS_CONFIG) each worker runs.
  --app         the application id (PUSH_APPLICATION_ID); a consumer group's own name shows that group
  --stage       only this stage's group`;

/** Consecutive restarts from which status calls it a restart loop. */
const RESTART_LOOP = 3;

export function describeRestarts(r: RestartStatus): string {
  if (!r.reachable) return `  restarts: no worker metrics at ${r.url} (${r.error})`;
  if (r.restarts === 0) return `  restarts: none (${r.url})`;
  const codes = Object.entries(r.byCode)
    .map(([code, n]) => `${code} ${n}`)
    .join(', ');
  const loop = r.consecutive >= RESTART_LOOP ? '  RESTART LOOP' : '';
  return `  restarts: ${r.restarts} (${codes}), ${r.consecutive} in a row, backoff ${(r.backoffMs / 1000).toFixed(1)} s (${r.url})${loop}`;
}

/**
 * A group's state in words. Kafka calls a group it has no record of "Dead": that is a stage no
 * worker has run under this application id, not a failure.
 */
export function describeState(status: GroupStatus): string {
  if (status.state === 'Dead' && status.topics.length === 0) return 'not running (no worker has run this stage under this application id)';
  if (status.state === 'Empty') return `Empty: no worker running (committed offsets kept), ${status.members.length} member(s)`;
  return `${status.state}, ${status.members.length} member(s)`;
}

export interface StatusOptions {
  readonly app: string;
  readonly stage?: string;
  readonly metricsUrls: string[];
}

/**
 * The groups to show: a group named `app` itself when it exists (a stage group given by its full
 * name, or an application that is not the pipeline), else every stage group `<app>-<stage>`
 * (pipeline/worker.ts names them so). The exact name comes first because stage names may contain
 * a hyphen: `<app>-fan-out-business` is also `<app>-fan-out` followed by `-business`.
 */
export async function statusGroups(admin: Admin, app: string, stage?: string): Promise<GroupStatus[]> {
  if (stage !== undefined) return [await groupStatus(admin, `${app}-${stage}`)];
  const own = await groupStatus(admin, app);
  if (own.state !== 'Dead' || own.topics.length > 0) return [own];
  return Promise.all(STAGES.map((s) => groupStatus(admin, `${app}-${s}`)));
}

/** The workers' /metrics URLs: `listed` (--metrics), else PUSH_STATUS_METRICS_URLS, else this host's PUSH_METRICS_PORT. */
export function metricsUrls(listed: string | undefined): string[] {
  const urls = readKey({ PUSH_STATUS_METRICS_URLS: listed ?? process.env.PUSH_STATUS_METRICS_URLS }, CONFIG_KEYS.PUSH_STATUS_METRICS_URLS);
  if (urls.length > 0) return urls;
  // A worker's port, not 0 (which lets a worker pick any free port): status needs one to read.
  return [`http://127.0.0.1:${readKey(process.env, CONFIG_KEYS.PUSH_METRICS_PORT, undefined, { min: 1, max: CONFIG_KEYS.PUSH_METRICS_PORT.max })}/metrics`];
}

export async function statusCommand(args: string[]): Promise<number> {
  const i = (name: string) => (args.indexOf(name) >= 0 ? args[args.indexOf(name) + 1] : undefined);
  const app = readKey({ PUSH_APPLICATION_ID: i('--app') ?? process.env.PUSH_APPLICATION_ID }, CONFIG_KEYS.PUSH_APPLICATION_ID);
  const stage = i('--stage');
  if (stage !== undefined && !(STAGES as readonly string[]).includes(stage))
    throw new UsageError(`--stage: expected one of ${STAGES.join(' | ')}, got ${JSON.stringify(stage)}`);
  const admin = kafkaClient(readEndpoints(), { clientId: 'pushctl' }).admin();
  await admin.connect();
  try {
    const groups = await statusGroups(admin, app, stage);
    const urls = metricsUrls(i('--metrics'));
    const [restarts, versions] = await Promise.all([Promise.all(groups.map((g) => restartStatus(urls, g.groupId))), appsVersions(urls)]);
    if (args.includes('--json')) {
      console.log(JSON.stringify({ applicationId: app, groups: groups.map((g, n) => ({ ...g, restarts: restarts[n] })), appsFile: versions }, null, 2));
      return 0;
    }
    groups.forEach((status, n) => {
      console.log(`group ${status.groupId}: ${describeState(status)}`);
      for (const m of status.members) {
        const parts = Object.entries(m.assignment)
          .map(([t, ps]) => `${t}[${ps.join(',')}]`)
          .join(' ');
        console.log(`  ${m.clientId} ${m.host} ${parts || '(no partitions)'}`);
      }
      for (const t of status.topics) {
        console.log(`  ${t.topic.padEnd(40)} lag ${String(t.lag).padStart(8)}  ${t.partitions.map((p) => `p${p.partition}:${p.lag}`).join(' ')}`);
      }
      // A stage that never ran has no restarts to report.
      if (status.state !== 'Dead' || status.topics.length > 0) for (const r of restarts[n]!) console.log(describeRestarts(r));
    });
    console.log('workers:');
    for (const line of describeVersions(versions)) console.log(line);
    return 0;
  } finally {
    await admin.disconnect();
  }
}
