/**
 * The workers' own counters, read from their `/metrics` endpoints (sinks/metrics/pipeline-metrics.ts)
 * before and after a step: Kafka records produced and fetched per persisted message, commits per
 * second by application, the garbage-collection share of the workers' CPU, and the persist → vendor
 * latency split into segments (from the workers' histograms).
 */

/** Every series of every worker, summed: `name{labels}` (as rendered) → value. */
export type MetricsSnapshot = Map<string, number>;

/** Parses the Prometheus text format into `into`, adding values of series already there. */
export function parseMetrics(text: string, into: MetricsSnapshot = new Map()): MetricsSnapshot {
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    const value = Number(line.slice(space + 1));
    if (space <= 0 || !Number.isFinite(value)) continue;
    const key = line.slice(0, space);
    into.set(key, (into.get(key) ?? 0) + value);
  }
  return into;
}

/** Scrapes and sums every worker's /metrics; null when one does not answer (a worker restarting). */
export async function scrapeWorkers(ports: readonly number[], timeoutMs = 5000): Promise<MetricsSnapshot | null> {
  const snapshot: MetricsSnapshot = new Map();
  try {
    for (const port of ports) {
      const response = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
      if (!response.ok) return null;
      parseMetrics(await response.text(), snapshot);
    }
  } catch {
    return null;
  }
  return snapshot;
}

/** after − before per series; a series that went down (a worker restarted) counts from zero. */
export function delta(before: MetricsSnapshot, after: MetricsSnapshot): MetricsSnapshot {
  const d: MetricsSnapshot = new Map();
  for (const [key, value] of after) {
    const previous = before.get(key) ?? 0;
    d.set(key, value >= previous ? value - previous : value);
  }
  return d;
}

type Labels = Record<string, string>;

function parseKey(key: string): { name: string; labels: Labels } {
  const brace = key.indexOf('{');
  if (brace < 0) return { name: key, labels: {} };
  const labels: Labels = {};
  for (const m of key.slice(brace + 1, -1).matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
    labels[m[1]!] = m[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
  return { name: key.slice(0, brace), labels };
}

/** Series of one metric whose labels pass `match`. */
function series(s: MetricsSnapshot, name: string, match: (labels: Labels) => boolean = () => true): Array<{ labels: Labels; value: number }> {
  const out: Array<{ labels: Labels; value: number }> = [];
  for (const [key, value] of s) {
    const parsed = parseKey(key);
    if (parsed.name === name && match(parsed.labels)) out.push({ labels: parsed.labels, value });
  }
  return out;
}

const sum = (rows: ReadonlyArray<{ value: number }>) => rows.reduce((a, r) => a + r.value, 0);

export interface SegmentFigure {
  /** Observations in the span. */
  readonly samples: number;
  /** Quantiles read from the histogram's buckets (linear within a bucket), ms; null with no samples. */
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
}

/** Quantile q of the histogram series passing `match`, summed, as Prometheus' histogram_quantile reads it. */
export function histogramQuantile(s: MetricsSnapshot, name: string, q: number, match: (labels: Labels) => boolean = () => true): number | null {
  const byLe = new Map<number, number>();
  for (const { labels, value } of series(s, `${name}_bucket`, match)) {
    const le = labels.le === '+Inf' ? Infinity : Number(labels.le);
    byLe.set(le, (byLe.get(le) ?? 0) + value);
  }
  const buckets = [...byLe.entries()].sort((a, b) => a[0] - b[0]);
  const count = buckets.length > 0 ? buckets[buckets.length - 1]![1] : 0;
  if (count <= 0) return null;
  const rank = q * count;
  let lower = 0;
  let below = 0;
  for (const [le, cumulative] of buckets) {
    if (cumulative >= rank) {
      if (le === Infinity) return lower; // beyond the last finite bucket: its bound is all we know
      const inBucket = cumulative - below;
      return Math.round(inBucket > 0 ? lower + ((le - lower) * (rank - below)) / inBucket : le);
    }
    lower = le;
    below = cumulative;
  }
  return lower;
}

function segment(s: MetricsSnapshot, name: string, match: (labels: Labels) => boolean): SegmentFigure {
  return {
    samples: Math.round(sum(series(s, `${name}_count`, match))),
    p50Ms: histogramQuantile(s, name, 0.5, match),
    p99Ms: histogramQuantile(s, name, 0.99, match),
  };
}

/** Persist → vendor, leading pushes (dispatch kind LEADING), split where the workers measure it. */
export interface LatencySegments {
  /** persisted_at → the decisions write the dispatch (fetch, the decision chain's hops and processing). */
  readonly persistedToDecided: SegmentFigure;
  /** Dispatch written → the fan-out's `process` (commit wait, transaction, fetch); decisions and fan-out in one worker only. */
  readonly decidedToReceived: SegmentFigure;
  /** Of that: the decisions' commits, flush → broker acknowledgement (every non-empty commit, not only leading pushes). */
  readonly decisionsCommit: SegmentFigure;
  /** persisted_at → the fan-out's `process` (cumulative). */
  readonly persistedToReceived: SegmentFigure;
  /** The fan-out's claim in im_push_task (MySQL; cache hits included). */
  readonly claim: SegmentFigure;
  /** One vendor submit call (HTTP; a batch for batch vendors), every vendor and dispatch kind. */
  readonly vendorCall: SegmentFigure;
  /** persisted_at → vendor accepted, as the fan-out saw it (every dispatch kind). */
  readonly persistedToAccepted: SegmentFigure;
}

/** `name n, name n, ...` of a per-application (or per-API) figure. */
export function formatByApp(byApp: Readonly<Record<string, number>>): string {
  return Object.entries(byApp)
    .map(([app, n]) => `${app} ${n}`)
    .join(', ');
}

export interface StepBreakdown {
  /** Records the workers produced in committed transactions (outputs + changelogs, every application) per persisted message. */
  readonly recordsProducedPerMessage: number;
  readonly outputRecordsPerMessage: number;
  readonly changelogRecordsPerMessage: number;
  /** Produced records per persisted message by stage group. */
  readonly producedPerMessageByApp: Readonly<Record<string, { readonly output: number; readonly changelog: number }>>;
  /** Produced records per persisted message by topic (run prefix and application id left off), busiest first. */
  readonly producedPerMessageByTopic: Readonly<Record<string, number>>;
  /** Records fetched by every application (transaction markers excluded) per persisted message. */
  readonly recordsFetchedPerMessage: number;
  /** Kafka requests the workers sent (consumers and task producers) per persisted message, and the busiest APIs. */
  readonly kafkaRequestsPerMessage: number;
  readonly kafkaRequestsPerMessageByApi: Readonly<Record<string, number>>;
  readonly kafkaRequestsPerMessageByApp: Readonly<Record<string, number>>;
  /** Input records processed and committed per persisted message. */
  readonly recordsProcessedPerMessage: number;
  /** Commits that wrote something per second, all applications (transactions under exactly-once; clickhouse commits offsets). */
  readonly commitsPerSecond: number;
  readonly commitsPerSecondByApp: Readonly<Record<string, number>>;
  /** Garbage-collection pauses of the workers over the span, s, and their share of the workers' CPU time. */
  readonly gcSeconds: number;
  readonly gcShareOfWorkerCpu: number;
  readonly segments: LatencySegments;
}

const r2 = (x: number) => Math.round(x * 100) / 100;

/** Requests per message by API, the five busiest. */
/** Requests per message summed by one label's value (the five largest). */
function requestsBy(key: (labels: Record<string, string>) => string, requests: ReturnType<typeof series>, per: (n: number) => number): Record<string, number> {
  const by = new Map<string, number>();
  for (const { labels, value } of requests) by.set(key(labels), (by.get(key(labels)) ?? 0) + value);
  return Object.fromEntries(
    [...by]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 5)
      .map(([api, n]) => [api, per(n)]),
  );
}

/** The breakdown of one span from the workers' counter deltas. */
export function stepBreakdown(
  d: MetricsSnapshot,
  o: { applicationId: string; topicPrefix?: string; persistedMessages: number; seconds: number; workerCpuMs: number },
): StepBreakdown {
  const stage = (app: string) => (app.startsWith(`${o.applicationId}-`) ? app.slice(o.applicationId.length + 1) : app);
  const per = (n: number) => (o.persistedMessages > 0 ? r2(n / o.persistedMessages) : 0);
  const produced = series(d, 'push_records_produced_total');
  const byApp: Record<string, { output: number; changelog: number }> = {};
  for (const { labels, value } of produced) {
    const entry = (byApp[stage(labels.app ?? '')] ??= { output: 0, changelog: 0 });
    if (labels.kind === 'changelog') entry.changelog += value;
    else entry.output += value;
  }
  const shortTopic = (topic: string) => {
    for (const prefix of [`${o.applicationId}-`, o.topicPrefix ?? '']) if (prefix !== '' && topic.startsWith(prefix)) return topic.slice(prefix.length);
    return topic;
  };
  const byTopic = new Map<string, number>();
  for (const { labels, value } of produced) byTopic.set(shortTopic(labels.topic ?? '?'), (byTopic.get(shortTopic(labels.topic ?? '?')) ?? 0) + value);
  const commitsByApp: Record<string, number> = {};
  for (const { labels, value } of series(d, 'push_transactions_total'))
    commitsByApp[stage(labels.app ?? '')] = (commitsByApp[stage(labels.app ?? '')] ?? 0) + value;
  const perSecond = (n: number) => (o.seconds > 0 ? Math.round((n / o.seconds) * 10) / 10 : 0);
  const gcSeconds = sum(series(d, 'push_gc_seconds_total'));
  const leading = (segmentName: string) => (l: Labels) => l.segment === segmentName && l.kind === 'LEADING';
  return {
    recordsProducedPerMessage: per(sum(produced)),
    outputRecordsPerMessage: per(sum(produced.filter((p) => p.labels.kind !== 'changelog'))),
    changelogRecordsPerMessage: per(sum(produced.filter((p) => p.labels.kind === 'changelog'))),
    producedPerMessageByApp: Object.fromEntries(Object.entries(byApp).map(([app, v]) => [app, { output: per(v.output), changelog: per(v.changelog) }])),
    producedPerMessageByTopic: Object.fromEntries([...byTopic].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([topic, n]) => [topic, per(n)])),
    recordsFetchedPerMessage: per(sum(series(d, 'push_records_fetched_total'))),
    recordsProcessedPerMessage: per(sum(series(d, 'push_records_processed_total'))),
    kafkaRequestsPerMessage: per(sum(series(d, 'push_kafka_requests_total'))),
    kafkaRequestsPerMessageByApi: requestsBy((l) => l.api ?? '?', series(d, 'push_kafka_requests_total'), per),
    kafkaRequestsPerMessageByApp: requestsBy((l) => stage(l.app ?? ''), series(d, 'push_kafka_requests_total'), per),
    commitsPerSecond: perSecond(Object.values(commitsByApp).reduce((a, b) => a + b, 0)),
    commitsPerSecondByApp: Object.fromEntries(Object.entries(commitsByApp).map(([app, n]) => [app, perSecond(n)])),
    gcSeconds: Math.round(gcSeconds * 1000) / 1000,
    gcShareOfWorkerCpu: o.workerCpuMs > 0 ? Math.round(((gcSeconds * 1000) / o.workerCpuMs) * 1000) / 1000 : 0,
    segments: {
      persistedToDecided: segment(d, 'push_latency_segment_ms', leading('persisted-decided')),
      decidedToReceived: segment(d, 'push_latency_segment_ms', leading('decided-received')),
      decisionsCommit: segment(d, 'push_commit_latency_ms', (l) => stage(l.app ?? '') === 'decisions'),
      persistedToReceived: segment(d, 'push_latency_segment_ms', leading('persisted-received')),
      claim: segment(d, 'push_latency_segment_ms', leading('claim')),
      vendorCall: segment(d, 'push_vendor_latency_ms', () => true),
      persistedToAccepted: segment(d, 'push_persist_to_accept_ms', () => true),
    },
  };
}

/** The segments as printable lines, in path order. */
export function formatSegments(s: LatencySegments, indent = '    '): string[] {
  const rows: Array<[string, SegmentFigure]> = [
    ['persisted → decided (decisions: fetch, hops, processing)', s.persistedToDecided],
    ['decided → fan-out received (commit wait + txn + fetch)', s.decidedToReceived],
    ["  of which the decisions' commit (flush → ack, all)", s.decisionsCommit],
    ['persisted → fan-out received (cumulative)', s.persistedToReceived],
    ['claim (MySQL)', s.claim],
    ['vendor call (HTTP, all kinds)', s.vendorCall],
    ['persisted → accepted, worker view (all kinds)', s.persistedToAccepted],
  ];
  const ms = (x: number | null) => (x === null ? 'n/a' : `${x} ms`);
  return rows.map(([what, f]) => `${indent}${what.padEnd(58)} p50 ${ms(f.p50Ms).padStart(8)}  p99 ${ms(f.p99Ms).padStart(8)}  (n=${f.samples})`);
}
