/**
 * The dashboard and the alert rules against a real Prometheus scraping a real run: a worker on the
 * local stack with the vendor emulators and the HTTP entry, a short demo workload (every vendor,
 * muted and quiet users, dead tokens) and one undecodable record. Prometheus (Debian's, started
 * here by stack/prometheus.ts) scrapes them every second with monitoring/alerts.yml loaded; then
 * every PromQL expression of docs/grafana-dashboard.json and of the rules is evaluated through its
 * HTTP API. Each must parse, each panel must return series whose labels and values the workload
 * implies (a panel that returns nothing fails), and the dead-letter alert must fire.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Producer } from 'kafkajs';
import { kafkaClient } from '../../common/kafka-client.ts';
import { startEnvironment, type Environment } from '../../demo/environment.ts';
import { freePort } from '../../demo/ports.ts';
import { trafficProducer, watchOutcomes, type OutcomeWatcher, type TrafficProducer } from '../../demo/traffic.ts';
import { buildPopulation, setupRecords, timeline } from '../../demo/workload.ts';
import { startEntry, type RunningEntry } from '../../entry/start.ts';
import { topicName } from '../../pipeline/topics.ts';
import { ROOT, stackPath } from '../../stack/paths.ts';
import { ALERT_RULES, prometheusApi, prometheusService } from '../../stack/prometheus.ts';
import type { StackService } from '../../stack/service.ts';
import { stackEndpoints } from '../support/stack.ts';

interface Series {
  readonly metric: Record<string, string>;
  readonly value: [number, string];
}
interface Panel {
  readonly title: string;
  readonly targets: ReadonlyArray<{ readonly expr: string }>;
}
interface Rule {
  readonly name: string;
  readonly query: string;
  readonly health: string;
  readonly lastError?: string;
  readonly state?: string;
  readonly alerts?: ReadonlyArray<{ labels: Record<string, string>; state: string }>;
}

const dashboard = JSON.parse(readFileSync(join(ROOT, 'docs', 'grafana-dashboard.json'), 'utf8')) as { panels: Panel[] };

let env: Environment;
let entry: RunningEntry;
let prometheus: StackService;
let prometheusDir: string;
let traffic: TrafficProducer;
let watcher: OutcomeWatcher;
let raw: Producer;

const query = (expr: string) => prometheusApi<{ resultType: string; result: Series[] }>(prometheus.port, '/api/v1/query', { query: expr });

before(async () => {
  env = await startEnvironment({ instances: 1, partitions: 2, verbose: false });
  entry = await startEntry({ ...process.env, PUSH_TOPIC_PREFIX: env.topicPrefix, PUSH_ENTRY_PORT: String(await freePort()), PUSH_LOG_LEVEL: 'warn' });
  prometheusDir = stackPath(`prometheus-${env.run}`);
  prometheus = prometheusService({
    name: `prometheus-${env.run}`,
    port: await freePort(),
    dir: prometheusDir,
    scrapeIntervalSeconds: 1,
    targets: { workers: env.workers.map((w) => `127.0.0.1:${w.metricsPort}`), entry: [`127.0.0.1:${entry.port}`] },
  });
  await prometheus.up();
  await env.waitReady();
  traffic = await trafficProducer(env.topicPrefix);
  watcher = await watchOutcomes(env.topicPrefix, `${env.applicationId}-scrape-watcher`);
  raw = kafkaClient(stackEndpoints(), { clientId: 'scrape-test' }).producer();
  await raw.connect();
});

after(async () => {
  await raw?.disconnect();
  await watcher?.close();
  await traffic?.close();
  await prometheus?.down();
  await entry?.stop();
  await env?.close();
  if (prometheusDir) rmSync(prometheusDir, { recursive: true, force: true });
});

/** What the workload did, as the outcomes topic tells it: the figures the panels must show. */
function facts() {
  const keys = [...watcher.counts.keys()];
  return {
    statuses: new Set(keys.filter((k) => /^[A-Z_]+$/.test(k))),
    acceptedVendors: new Set(keys.filter((k) => k.startsWith('vendor/')).map((k) => k.slice('vendor/'.length))),
    suppressionReasons: new Set(keys.filter((k) => /^(SUPPRESSED|DROPPED)\//.test(k)).map((k) => k.split('/')[1]!)),
  };
}

const labels = (series: readonly Series[], name: string) => new Set(series.map((s) => s.metric[name] ?? ''));
const values = (series: readonly Series[]) => series.map((s) => Number(s.value[1]));
const same = (a: ReadonlySet<string>, b: ReadonlySet<string>) => a.size === b.size && [...a].every((x) => b.has(x));
const show = (s: ReadonlySet<string>) => `{${[...s].sort().join(', ')}}`;
const RECEIPT_VENDORS = new Set(['hms', 'xiaomi', 'oppo', 'vivo']);

/**
 * Per panel title, what its series must show after the workload: undefined when they do, else what
 * is wrong. A panel missing here fails the test, so a new panel comes with its expectation.
 */
const EXPECTED: Record<string, (series: readonly Series[], f: ReturnType<typeof facts>) => string | undefined> = {
  'Records in per stage (rate)': (s) =>
    ['persisted-ingest', 'online-filter', 'merge', 'policy'].every((n) => labels(s, 'node').has(n)) && values(s).some((v) => v > 0)
      ? undefined
      : `nodes ${show(labels(s, 'node'))}`,
  'Consumer lag per topic': (s) =>
    labels(s, 'topic').has(topicName('persisted', env.topicPrefix)) && values(s).every((v) => v >= 0) ? undefined : `topics ${show(labels(s, 'topic'))}`,
  'Commit latency p99 (ms)': (s) => (s.length === 1 && values(s)[0]! > 0 && Number.isFinite(values(s)[0]) ? undefined : `values ${values(s)}`),
  'Outcomes by status': (s, f) => (same(labels(s, 'status'), f.statuses) ? undefined : `statuses ${show(labels(s, 'status'))}, outcomes ${show(f.statuses)}`),
  'Suppressions by reason': (s, f) =>
    f.suppressionReasons.size > 0 && same(labels(s, 'reason'), f.suppressionReasons)
      ? undefined
      : `reasons ${show(labels(s, 'reason'))}, outcomes ${show(f.suppressionReasons)}`,
  'Merge ratio (submissions per trigger)': (s) => (s.length === 1 && values(s)[0]! > 0 && values(s)[0]! <= 1 ? undefined : `values ${values(s)}`),
  'Vendor latency p99 by vendor (ms)': (s, f) =>
    same(labels(s, 'vendor'), f.acceptedVendors) ? undefined : `vendors ${show(labels(s, 'vendor'))}, accepted ${show(f.acceptedVendors)}`,
  'Vendor results by code': (s, f) =>
    [...f.acceptedVendors].every((v) => s.some((x) => x.metric.vendor === v && (x.metric.code ?? '') === '')) && labels(s, 'code').size > 1
      ? undefined
      : `vendor/code ${s.map((x) => `${x.metric.vendor}/${x.metric.code}`)}`,
  'Token invalidations': (s, f) =>
    f.statuses.has('DEAD_TOKEN') && s.length > 0 && values(s).some((v) => v > 0)
      ? undefined
      : `series ${s.length}, dead tokens ${f.statuses.has('DEAD_TOKEN')}`,
  'Dead letters (since each worker started)': (s) =>
    s.some((x) => x.metric.topic === topicName('persisted', env.topicPrefix) && Number(x.value[1]) > 0) ? undefined : `topics ${show(labels(s, 'topic'))}`,
  'Quota used (pushes accepted in the last 24 h)': (s, f) =>
    same(labels(s, 'vendor'), f.acceptedVendors) && same(labels(s, 'app'), new Set([env.appId]))
      ? undefined
      : `vendors ${show(labels(s, 'vendor'))} apps ${show(labels(s, 'app'))}`,
  'Assigned tasks per instance': (s) => (s.length === 1 && values(s)[0]! > 0 ? undefined : `values ${values(s)}`),
  'Pushes accepted per vendor': (s, f) =>
    same(labels(s, 'vendor'), f.acceptedVendors) && values(s).every((v) => v > 0) ? undefined : `vendors ${show(labels(s, 'vendor'))}`,
  'Receipts delivered per accepted push (vendors with receipts)': (s, f) => {
    const expected = new Set([...f.acceptedVendors].filter((v) => RECEIPT_VENDORS.has(v)));
    return expected.size > 0 && same(labels(s, 'vendor'), expected) && values(s).every((v) => v > 0 && v <= 2)
      ? undefined
      : `vendors ${show(labels(s, 'vendor'))} values ${values(s)}, expected ${show(expected)}`;
  },
};

test('Prometheus scrapes every worker and the entry, and loads every alert rule', async () => {
  type Targets = { activeTargets: Array<{ labels: { job: string }; health: string }> };
  // Prometheus finds the targets from its file_sd files a moment after it starts.
  let targets: Targets = { activeTargets: [] };
  await until('every target up', async () => {
    targets = await prometheusApi<Targets>(prometheus.port, '/api/v1/targets');
    return targets.activeTargets.length === env.workers.length + 1 && targets.activeTargets.every((x) => x.health === 'up');
  });
  assert.deepEqual([...new Set(targets.activeTargets.map((t) => t.labels.job))].sort(), ['entry', 'workers']);
  const rules = await loadedRules();
  const alertNames = [...readFileSync(ALERT_RULES, 'utf8').matchAll(/- alert: (\w+)/g)].map((m) => m[1]!);
  assert.deepEqual(rules.map((r) => r.name).sort(), alertNames.sort());
});

test('after a workload, every panel and rule evaluates, the panels show what the workload did, and the dead letter fires its alert', async () => {
  const population = buildPopulation({ users: 150, apps: [env.appId], idPrefix: `${env.run}-`, deadTokenShare: 0.15 }, env.emulators.token);
  for (const device of population.devices) if (device.deadFirstToken) env.emulators[device.tokens[0]!.vendor].deadTokens.add(device.tokens[0]!.token);
  const setup = setupRecords(population);
  await traffic.send('tokens', setup.tokens);
  await traffic.send('settings', setup.settings);
  await traffic.play(timeline(population, { users: 150, messages: 1200, durationMs: 8000, startMs: Date.now() + 1000 }));
  // Not Avro at all: the persisted-message ingest sends it to the DLQ.
  await raw.send({ topic: topicName('persisted', env.topicPrefix), acks: -1, messages: [{ key: `${env.run}-poison`, value: Buffer.from('not avro') }] });
  await fetch(`http://127.0.0.1:${entry.port}/health`);

  const panels = dashboard.panels.flatMap((p) => p.targets.map((t) => ({ title: p.title, expr: t.expr })));
  assert.deepEqual(
    panels.map((p) => p.title).filter((t) => !(t in EXPECTED)),
    [],
    'every panel has an expectation here',
  );
  // A panel counts once it showed the workload: a rate over 1m falls back to 0 a minute later.
  const problems = new Map<string, string>(panels.map((p) => [p.title, 'not evaluated']));
  await until(
    'every panel to show the workload',
    async () => {
      const f = facts();
      for (const p of panels.filter((x) => problems.has(x.title))) {
        const answer = await query(p.expr); // throws on a parse error: a broken panel fails at once
        assert.equal(answer.resultType, 'vector', p.title);
        const problem = answer.result.length === 0 ? 'no series' : EXPECTED[p.title]!(answer.result, f);
        if (problem) problems.set(p.title, problem);
        else problems.delete(p.title);
      }
      return problems.size === 0;
    },
    120_000,
  ).catch((error: Error) => assert.fail(`${error.message}\n${[...problems].map(([t, p]) => `${t}: ${p}`).join('\n')}`));

  for (const rule of await loadedRules()) {
    await query(rule.query); // parses and evaluates on live data
    assert.equal(rule.health, 'ok', `${rule.name}: ${rule.lastError ?? ''}`);
  }
  await until('the dead-letter alert to fire for the poisoned topic', async () => {
    const dlq = (await loadedRules()).find((r) => r.name === 'PushDeadLetters')!;
    return (dlq.alerts ?? []).some((a) => a.state === 'firing' && a.labels.topic === topicName('persisted', env.topicPrefix));
  });
  const firing = (await loadedRules()).filter((r) => r.name !== 'PushDeadLetters' && r.state === 'firing');
  assert.deepEqual(
    firing.map((r) => r.name),
    [],
    'a healthy run fires no other alert',
  );
});

async function loadedRules(): Promise<Rule[]> {
  const data = await prometheusApi<{ groups: Array<{ rules: Rule[] }> }>(prometheus.port, '/api/v1/rules');
  return data.groups.flatMap((g) => g.rules);
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}
