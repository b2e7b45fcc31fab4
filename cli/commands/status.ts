import { Kafka, logLevel } from 'kafkajs';
import { readKey } from '../../common/config.ts';
import { CONFIG_KEYS } from '../../common/config-keys.ts';
import { readEndpoints } from '../../common/endpoints.ts';
import { groupStatus, restartStatus, type RestartStatus } from '../../pipeline/group-status.ts';

export const statusHelp = `pushctl status [--app offline-push] [--metrics URL[,URL...]] [--json]

  the pipeline's consumer group: state, members with their assigned partitions, and per input
  topic the committed offsets, end offsets and lag (one line per stage's source topic); then, from
  each worker's /metrics (--metrics, else PUSH_STATUS_METRICS_URLS, else this host's
  PUSH_METRICS_PORT), the group's restarts by reason and its current restart backoff`;

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

function metricsUrls(args: string[]): string[] {
  const i = args.indexOf('--metrics');
  const listed = readKey({ PUSH_STATUS_METRICS_URLS: i >= 0 ? args[i + 1] : process.env.PUSH_STATUS_METRICS_URLS }, CONFIG_KEYS.PUSH_STATUS_METRICS_URLS);
  if (listed.length > 0) return listed;
  // A worker's port, not 0 (which lets a worker pick any free port): status needs one to read.
  return [`http://127.0.0.1:${readKey(process.env, CONFIG_KEYS.PUSH_METRICS_PORT, undefined, { min: 1, max: CONFIG_KEYS.PUSH_METRICS_PORT.max })}/metrics`];
}

export async function statusCommand(args: string[]): Promise<number> {
  const i = args.indexOf('--app');
  const groupId = readKey({ PUSH_APPLICATION_ID: i >= 0 ? args[i + 1] : process.env.PUSH_APPLICATION_ID }, CONFIG_KEYS.PUSH_APPLICATION_ID);
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
      const parts = Object.entries(m.assignment)
        .map(([t, ps]) => `${t}[${ps.join(',')}]`)
        .join(' ');
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
