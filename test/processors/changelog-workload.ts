/**
 * Counts the Kafka records the decision stages write per persisted message, on the benchmark's own
 * synthetic traffic (demo/workload.ts: one-to-one chats, group storms, online devices that ACK,
 * background devices), run through the TopologyTestDriver with the real decisions topology.
 *
 * The driver commits every `commitIntervalMs` of simulated time, as the runtime does under
 * exactly-once (a store coalesces its writes per key between two commits), and the run goes on
 * until every hold, merge window and window memory has expired, so each window's whole life
 * (open, close, tombstone) is counted.
 *
 * Run it directly to print the table: `npx tsx test/processors/changelog-workload.ts`.
 */
import { TopologyTestDriver } from '../../topology/test-driver.ts';
import { rawAvroValueSerdes } from '../../pipeline/serdes.ts';
import { buildDecisionsTopology } from '../../pipeline/apps/decisions.ts';
import { TOPICS } from '../../pipeline/topics.ts';
import { ONLINE_FILTER_STORE_NAMES } from '../../processors/online-filter/options.ts';
import { MERGE_STORE_NAMES } from '../../processors/merge/options.ts';
import { POLICY_STORE_NAMES } from '../../processors/policy/options.ts';
import { buildPopulation, setupRecords, timeline } from '../../demo/workload.ts';

export interface ChangelogWorkloadOptions {
  users?: number;
  messages?: number;
  /** Messages are persisted over this span. */
  durationMs?: number;
  commitIntervalMs?: number;
  seed?: number;
}

export interface ChangelogCounts {
  /** Persisted messages fed. */
  messages: number;
  /** Changelog records per store, over the whole run (setup included). */
  changelog: Record<string, number>;
  /** Records written to the pipeline's topics (candidates, merged, dispatch, outcomes). */
  topics: Record<string, number>;
  /** Presence events fed (CONNECT, BACKGROUND, ACK). */
  presenceEvents: number;
}

const START = Date.UTC(2026, 0, 15, 12, 0, 0);

export async function countChangelogRecords(options: ChangelogWorkloadOptions = {}): Promise<ChangelogCounts> {
  const users = options.users ?? 1_000;
  const messages = options.messages ?? 4_000;
  const durationMs = options.durationMs ?? 20_000;
  const commitMs = options.commitIntervalMs ?? 100;
  const seed = options.seed ?? 1;
  const driver = new TopologyTestDriver(buildDecisionsTopology({ valueSerdes: rawAvroValueSerdes() }), {
    startWallClockMs: START - 5_000,
    commitEveryInput: false,
  });
  const topics = [TOPICS.candidates.name, TOPICS.merged.name, TOPICS.dispatch.name, TOPICS.outcomes.name];
  const written: Record<string, number> = Object.fromEntries(topics.map((t) => [t, 0]));
  const drainTopics = () => {
    for (const t of topics) written[t]! += driver.readAllOutputs(t).length;
  };
  let nextCommit = driver.wallClockTimeMs() + commitMs;
  const runUntil = async (at: number) => {
    while (nextCommit <= at) {
      await driver.advanceWallClockTime(nextCommit - driver.wallClockTimeMs());
      await driver.commit();
      drainTopics();
      nextCommit += commitMs;
    }
  };
  try {
    const population = buildPopulation({ users, seed }, (vendor, s) => `${vendor}:${s}`, START);
    const setup = setupRecords(population, START - 5_000);
    for (const r of setup.tokens) await driver.pipeInput(TOPICS.tokens.name, r.key, r.value);
    for (const r of setup.settings) await driver.pipeInput(TOPICS.settings.name, r.key, r.value);
    let fed = 0;
    let presenceEvents = 0;
    for (const r of timeline(population, { users, seed, messages, durationMs, startMs: START })) {
      await runUntil(r.at);
      await driver.pipeInput(r.topic === 'persisted' ? TOPICS.persisted.name : TOPICS.presence.name, r.key, r.value, { timestamp: r.at });
      if (r.topic === 'persisted') fed++;
      else presenceEvents++;
    }
    // Long enough for every hold (≤ 30 s), window (≤ 10 s) and window memory (60 s) to end.
    await runUntil(START + durationMs + 120_000);
    const stores = [...Object.values(ONLINE_FILTER_STORE_NAMES), ...Object.values(MERGE_STORE_NAMES), ...Object.values(POLICY_STORE_NAMES)];
    return { messages: fed, presenceEvents, changelog: Object.fromEntries(stores.map((s) => [s, driver.changelog(s).length])), topics: written };
  } finally {
    await driver.close();
  }
}

/** The counts as a table: records per persisted message, per store and in total. */
export function formatCounts(c: ChangelogCounts): string {
  const per = (n: number) => (n / c.messages).toFixed(3);
  const lines = [`${c.messages} persisted messages, ${c.presenceEvents} presence events`];
  let changelog = 0;
  for (const [store, n] of Object.entries(c.changelog)) {
    changelog += n;
    lines.push(`  ${store.padEnd(28)} ${String(n).padStart(7)}  ${per(n)}/msg`);
  }
  lines.push(`  ${'changelog, all stores'.padEnd(28)} ${String(changelog).padStart(7)}  ${per(changelog)}/msg`);
  let total = changelog;
  for (const [topic, n] of Object.entries(c.topics)) {
    total += n;
    lines.push(`  ${topic.padEnd(28)} ${String(n).padStart(7)}  ${per(n)}/msg`);
  }
  lines.push(`  ${'all records'.padEnd(28)} ${String(total).padStart(7)}  ${per(total)}/msg`);
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(formatCounts(await countChangelogRecords()));
}
