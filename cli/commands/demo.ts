import { readInt } from '../../common/config.ts';
import { startEnvironment } from '../../demo/environment.ts';
import { trafficProducer, watchOutcomes } from '../../demo/traffic.ts';
import { buildPopulation, setupRecords, timeline } from '../../demo/workload.ts';
import { groupStatus } from '../../pipeline/group-status.ts';
import { STAGES } from '../../pipeline/apps/index.ts';
import mysql from 'mysql2/promise';
import { formatArrivalTable } from './arrival.ts';
import { distinctTotal } from '../../pipeline/arrival-queries.ts';
import { TASK_STATUS } from '../../processors/model/task-status.ts';
import { queryArrival } from '../../sinks/clickhouse/arrival-query.ts';
import { connectionFromEndpoints, createClickhouseClient } from '../../sinks/clickhouse/client.ts';
import { kafkaClient } from '../../common/kafka-client.ts';
import { readEndpoints } from '../../common/endpoints.ts';
import { delay } from '../../stack/process.ts';
import { VENDORS } from '../../processors/model/vendors.ts';
import { mysqlClientOptions } from '../../common/mysql-url.ts';

export const demoHelp = `pushctl demo [--users N] [--messages N] [--seconds S] [--instances N]

  the main job on the embedded default: local stack, migrations, topics, all six vendor
  emulators, worker processes, synthetic IM traffic (users with several devices, presence churn,
  group storms, quiet hours, private mode, dead tokens) with a progress bar, then a summary:
  events, pushes by vendor, merged, suppressed by reason, arrival rate read from ClickHouse, the
  push tasks (failed ones too) as MySQL has them, what the terms mean, and the commands to try next
  on that run.
  defaults: 2000 users, 20000 messages over 30 s, 2 worker instances`;

/** A numeric flag; a bad value names the flag. */
function flag(args: string[], name: string, fallback: number, max: number): number {
  const i = args.indexOf(name);
  return readInt({ [name]: i >= 0 ? args[i + 1] : undefined }, name, fallback, { min: 1, max });
}

function bar(done: number, total: number, width = 30): string {
  const filled = Math.round((done / Math.max(1, total)) * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(Math.round((done / Math.max(1, total)) * 100)).padStart(3)}%`;
}

interface PartitionOffsets {
  readonly key: string;
  readonly lag: number;
}

/** Committed and end offsets of every input partition of the run's consumer groups. */
async function pipelineOffsets(applicationId: string, stages: readonly string[] = STAGES): Promise<PartitionOffsets[]> {
  const admin = kafkaClient(readEndpoints(), { clientId: 'pushctl-demo' }).admin();
  await admin.connect();
  try {
    const parts: PartitionOffsets[] = [];
    for (const stage of stages) {
      const status = await groupStatus(admin, `${applicationId}-${stage}`);
      for (const t of status.topics)
        for (const p of t.partitions) parts.push({ key: `${stage}/${t.topic}/${p.partition}=${p.committed}/${p.end}`, lag: p.lag });
    }
    return parts;
  } finally {
    await admin.disconnect();
  }
}

/**
 * Waits until the pipeline has drained: the offsets stop moving (same twice, `intervalMs` apart),
 * every partition is caught up (lag 0: the stages commit past transaction markers,
 * topology/task-input.ts), and `quiet()` holds; so the summary's MySQL and ClickHouse counts are
 * final. Should a partition stay behind while nothing moves for `stuckChecks` checks, the summary
 * goes ahead and names it.
 */
async function waitDrained(applicationId: string, quiet: () => boolean, intervalMs = 2000, stuckChecks = 15): Promise<void> {
  let previous = '';
  let still = 0;
  for (;;) {
    await delay(intervalMs);
    const offsets = await pipelineOffsets(applicationId);
    const snapshot = offsets
      .map((p) => p.key)
      .sort()
      .join(',');
    still = snapshot === previous ? still + 1 : 0;
    previous = snapshot;
    if (still === 0 || !quiet()) continue;
    const behind = offsets.filter((p) => p.lag > 0);
    if (behind.length === 0) return;
    if (still >= stuckChecks) {
      console.log(`\n[demo] still behind, not moving: ${behind.map((p) => `${p.key} (lag ${p.lag})`).join(', ')}`);
      return;
    }
  }
}

/** Waits until the decisions stage has read everything on the given (non-transactionally written) topics. */
async function waitConsumed(applicationId: string, topics: readonly string[]): Promise<void> {
  for (;;) {
    const offsets = await pipelineOffsets(applicationId, ['decisions']);
    const relevant = offsets.filter((p) => topics.some((t) => p.key.startsWith(`decisions/${t}/`)));
    if (relevant.length > 0 && relevant.every((p) => p.lag === 0)) return;
    await delay(500);
  }
}

/** What the summary's words mean, printed under it. */
export const TERMS = `
what the numbers mean:
  accepted   a vendor took the push (its API answered OK); arrived = accepted or reported delivered
  delivered  the vendor's receipt says the device got it. APNs and FCM send no delivery receipts,
             so their pushes stay "unknown" (accepted, no receipt): expected, not a loss
  merged     a message that needed no push of its own: it was folded into the push already sent
             for its conversation within the merge window (PUSH_MERGE_WINDOW_MS)
  failed     every channel of the push failed (retries, then fallback vendors); MySQL keeps these
             tasks with status failed, and pushctl replay re-submits them`;

export interface TaskSummary {
  /** Tasks of the app by im_push_task.status name. */
  readonly byStatus: Readonly<Record<string, number>>;
  /** Failed tasks by vendor and fail code. */
  readonly failed: ReadonlyArray<{ vendor: string; code: string; count: number }>;
  /** A user of the run who has push tasks (so tokens and tasks to look at). */
  readonly sampleUid?: string;
}

/** The app's push tasks as MySQL has them (im_push_task, written by the receipts stage), summed over the uid shards (PUSH_MYSQL_SHARDS). */
export async function taskSummary(appId: string): Promise<TaskSummary> {
  const names = new Map<number, string>(Object.entries(TASK_STATUS).map(([name, code]) => [code, name]));
  const byStatus: Record<string, number> = {};
  const failed = new Map<string, { vendor: string; code: string; count: number }>();
  let sampleUid: string | undefined;
  const endpoints = readEndpoints();
  for (const url of endpoints.mysqlShards) {
    const db = await mysql.createConnection(mysqlClientOptions(url, endpoints.mysqlSecurity));
    try {
      const [statuses] = await db.query('SELECT status, COUNT(*) AS n FROM im_push_task WHERE app_id = ? GROUP BY status', [appId]);
      for (const r of statuses as Array<{ status: number; n: number }>) {
        const name = names.get(r.status) ?? String(r.status);
        byStatus[name] = (byStatus[name] ?? 0) + Number(r.n);
      }
      const [rows] = await db.query(
        `SELECT vendor, COALESCE(fail_code, '') AS code, COUNT(*) AS n FROM im_push_task WHERE app_id = ? AND status = ${TASK_STATUS.failed} GROUP BY vendor, code`,
        [appId],
      );
      for (const r of rows as Array<{ vendor: string; code: string; n: number }>) {
        const key = `${r.vendor}\u001f${r.code}`;
        failed.set(key, { vendor: r.vendor, code: r.code, count: (failed.get(key)?.count ?? 0) + Number(r.n) });
      }
      const [sample] = await db.query('SELECT uid FROM im_push_task WHERE app_id = ? ORDER BY id LIMIT 1', [appId]);
      sampleUid ??= (sample as Array<{ uid: string }>)[0]?.uid;
    } finally {
      await db.end();
    }
  }
  const sorted = [...failed.values()].sort((x, y) => x.vendor.localeCompare(y.vendor) || x.code.localeCompare(y.code));
  return { byStatus, failed: sorted, ...(sampleUid === undefined ? {} : { sampleUid }) };
}

export function describeTasks(tasks: TaskSummary): string {
  const count = (name: string) => tasks.byStatus[name] ?? 0;
  const failed = count('failed');
  const lines = [
    `\npush tasks in MySQL (im_push_task): ${Object.keys(TASK_STATUS)
      .map((name) => `${name} ${count(name)}`)
      .join(', ')}`,
    `failed tasks          ${failed}${failed > 0 ? `  (${tasks.failed.map((f) => `${f.vendor} ${f.code || '-'} ${f.count}`).join(', ')})` : ''}`,
  ];
  return lines.join('\n');
}

/** The commands to try next on this run, with its names filled in. */
export function nextCommands(run: { topicPrefix: string; applicationId: string; appId: string; uid: string }): string {
  const commands: Array<[string, string]> = [
    [`npx pushctl status --app ${run.applicationId}`, "the run's stage groups and their lag (Empty now: the demo stopped its workers)"],
    [`npx pushctl arrival --since 1h --by app`, `arrival per app; this run's is ${run.appId}`],
    [`npx pushctl tokens show ${run.uid}`, "a user's devices and the state of their tokens"],
    [`PUSH_TOPIC_PREFIX=${run.topicPrefix} npx pushctl replay --since 1h --app ${run.appId} --dry-run`, 'what replaying the failed tasks would send'],
    [`npx pushctl topics describe --prefix ${run.topicPrefix}`, "the run's topics and their sizes"],
  ];
  return [
    `\nnext, on this run (topic prefix ${run.topicPrefix}, application id ${run.applicationId}, app ${run.appId}, user ${run.uid}):`,
    ...commands.map(([command, what]) => `  ${command}\n      ${what}`),
  ].join('\n');
}

export async function demoCommand(args: string[]): Promise<number> {
  const users = flag(args, '--users', 2000, 1_000_000);
  const messages = flag(args, '--messages', 20_000, 10_000_000);
  const seconds = flag(args, '--seconds', 30, 3600);
  const instances = flag(args, '--instances', 2, 16);
  const started = Date.now();

  // Two apps, the second's APNs entry with certificate auth (docs/vendors.md): the demo shows both kinds.
  const env = await startEnvironment({ instances, apps: 2 });
  try {
    const population = buildPopulation({ users, apps: env.appIds, idPrefix: `${env.run}-` }, env.emulators.token);
    // Some devices' preferred token is one the vendor has already forgotten: the fan-out must drop it and fall back.
    for (const device of population.devices) if (device.deadFirstToken) env.emulators[device.tokens[0]!.vendor].deadTokens.add(device.tokens[0]!.token);
    console.log(`[demo] ${users} users, ${population.devices.length} devices; waiting for workers to be ready ...`);
    await env.waitReady();

    const traffic = await trafficProducer(env.topicPrefix);
    const watcher = await watchOutcomes(env.topicPrefix, `${env.applicationId}-demo-watcher`);
    const setup = setupRecords(population);
    await traffic.send('tokens', setup.tokens);
    await traffic.send('settings', setup.settings);
    // Tokens and settings must be in the policy's state before the first message needs them.
    await waitConsumed(env.applicationId, [`${env.topicPrefix}push.tokens`, `${env.topicPrefix}push.settings`]);

    const events = [...timeline(population, { users, messages, durationMs: seconds * 1000, startMs: Date.now() + 1000 })];
    console.log(`[demo] playing ${events.length} events (${messages} persisted messages) over ${seconds} s`);
    let sent = 0;
    // On a terminal the bar redraws in place; in a log it is a line every 5 s.
    const tty = process.stdout.isTTY;
    const showProgress = () => {
      const line = `[demo] ${bar(sent, events.length)} events ${sent}/${events.length}  outcomes ${watcher.total()}  accepted ${watcher.counts.get('ACCEPTED') ?? 0}`;
      process.stdout.write(tty ? `\r${line}   ` : `${line}\n`);
    };
    const progress = setInterval(showProgress, tty ? 500 : 5000);
    await traffic.play(events, (n) => (sent = n));
    // Drain: hold and merge windows close, trailing updates go out, receipts come back.
    await waitDrained(env.applicationId, () => watcher.quietForMs() > 4000);
    clearInterval(progress);
    showProgress();
    if (tty) process.stdout.write('\n');

    const c = (k: string) => watcher.counts.get(k) ?? 0;
    const reasons = [...watcher.counts.entries()].filter(([k]) => /^(SUPPRESSED|DROPPED)\//.test(k)).sort();
    console.log('\n=== offline-push demo summary ===');
    console.log(`input events          ${events.length} (persisted messages ${messages}, presence ${events.length - messages})`);
    console.log(`outcomes              ${watcher.total()}`);
    console.log(`vendor accepted       ${c('ACCEPTED')}  (${VENDORS.map((v) => `${v} ${c(`vendor/${v}`)}`).join(', ')})`);
    console.log(`merged                ${c('MERGED')}`);
    console.log(`dead tokens           ${c('DEAD_TOKEN')}    failed outcomes ${c('FAILED')}    throttled ${c('THROTTLED')}`);
    for (const [k, n] of reasons) console.log(`${k.toLowerCase().padEnd(32)}${n}`);
    await watcher.close();
    await traffic.close();
    const clickhouse = createClickhouseClient(connectionFromEndpoints(readEndpoints()));
    try {
      const since = Math.floor(started / 1000) - 60;
      for (const appId of env.appIds) {
        console.log(`\narrival rate of app ${appId} from ClickHouse (distinct submitted (task, device) pairs):`);
        const rows = await queryArrival(clickhouse, 'vendor', since, appId);
        const total = rows.length > 0 ? distinctTotal(await queryArrival(clickhouse, 'app', since, appId)) : undefined;
        console.log(formatArrivalTable('vendor', rows, new Date(started), total).trimEnd());
      }
    } finally {
      await clickhouse.close();
    }
    const tasks = await taskSummary(env.appId);
    for (const appId of env.appIds) {
      console.log(`\napp ${appId}${appId === env.appIds.at(-1) && env.appIds.length > 1 ? ' (APNs certificate auth)' : ''}:`);
      console.log(describeTasks(appId === env.appId ? tasks : await taskSummary(appId)).trimStart());
    }
    console.log(TERMS);
    console.log(`\n[demo] done in ${((Date.now() - started) / 1000).toFixed(1)} s (run ${env.run})`);
    console.log(
      nextCommands({
        topicPrefix: env.topicPrefix,
        applicationId: env.applicationId,
        appId: env.appId,
        uid: tasks.sampleUid ?? population.users[0]?.uid ?? `${env.run}-u0`,
      }),
    );
    return 0;
  } finally {
    await env.close();
  }
}
