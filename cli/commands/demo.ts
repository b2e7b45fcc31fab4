import { readInt } from '../../common/config.ts';
import { startEnvironment } from '../../demo/environment.ts';
import { trafficProducer, watchOutcomes } from '../../demo/traffic.ts';
import { buildPopulation, setupRecords, timeline } from '../../demo/workload.ts';
import { groupStatus } from '../../pipeline/group-status.ts';
import { STAGES } from '../../pipeline/apps/index.ts';
import { formatArrivalTable } from './arrival.ts';
import { queryArrival } from '../../sinks/clickhouse/arrival-query.ts';
import { connectionFromEndpoints, createClickhouseClient } from '../../sinks/clickhouse/client.ts';
import { Kafka, logLevel } from 'kafkajs';
import { readEndpoints } from '../../common/endpoints.ts';
import { delay } from '../../stack/process.ts';
import { VENDORS } from '../../processors/shared/vendors.ts';

export const demoHelp = `pushctl demo [--users N] [--messages N] [--seconds S] [--instances N]

  the main job on the embedded default: local stack, migrations, topics, all six vendor
  emulators, worker processes, synthetic IM traffic (users with several devices, presence churn,
  group storms, quiet hours, private mode, dead tokens) with a progress bar, then a summary:
  events, pushes by vendor, merged, suppressed by reason, arrival rate read from ClickHouse.
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
  const admin = new Kafka({ clientId: 'pushctl-demo', brokers: readEndpoints().kafkaBrokers, logLevel: logLevel.NOTHING }).admin();
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
 * no partition is behind by more than the commit markers its transactional writers leave at its
 * end (consumers never "read" those, so under exactly-once lag does not reach 0), and `quiet()` holds.
 */
async function waitDrained(applicationId: string, quiet: () => boolean, intervalMs = 2000): Promise<void> {
  const MARKER_SLACK = 24;
  let previous = '';
  for (;;) {
    await delay(intervalMs);
    const offsets = await pipelineOffsets(applicationId);
    const snapshot = offsets
      .map((p) => p.key)
      .sort()
      .join(',');
    if (snapshot === previous && quiet() && offsets.every((p) => p.lag <= MARKER_SLACK)) return;
    previous = snapshot;
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

export async function demoCommand(args: string[]): Promise<number> {
  const users = flag(args, '--users', 2000, 1_000_000);
  const messages = flag(args, '--messages', 20_000, 10_000_000);
  const seconds = flag(args, '--seconds', 30, 3600);
  const instances = flag(args, '--instances', 2, 16);
  const started = Date.now();

  const env = await startEnvironment({ instances });
  try {
    const population = buildPopulation({ users, apps: [env.appId], idPrefix: `${env.run}-` }, env.emulators.token);
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
    console.log(`dead tokens           ${c('DEAD_TOKEN')}    failed ${c('FAILED')}    throttled ${c('THROTTLED')}`);
    for (const [k, n] of reasons) console.log(`${k.toLowerCase().padEnd(32)}${n}`);
    await watcher.close();
    await traffic.close();
    console.log(`\narrival rate of app ${env.appId} from ClickHouse (distinct submitted (task, device) pairs):`);
    const clickhouse = createClickhouseClient(connectionFromEndpoints(readEndpoints()));
    try {
      console.log(formatArrivalTable('vendor', await queryArrival(clickhouse, 'vendor', Math.floor(started / 1000) - 60, env.appId), new Date(started)));
    } finally {
      await clickhouse.close();
    }
    console.log(`\n[demo] done in ${((Date.now() - started) / 1000).toFixed(1)} s (run ${env.run})`);
    return 0;
  } finally {
    await env.close();
  }
}
