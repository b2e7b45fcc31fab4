/**
 * A small Prometheus registry: counters, gauges and histograms with labels, rendered in the text
 * exposition format (version 0.0.4). Updates are synchronous map operations, so metrics listeners
 * built on it never block the pipeline.
 */
type Labels = Readonly<Record<string, string>>;

const NEEDS_ESCAPE = /[\\"\n]/;

function labelValue(value: unknown): string {
  const text = String(value);
  return NEEDS_ESCAPE.test(text) ? text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n') : text;
}

/** Label names of the key being built (labelKey is synchronous: one array serves every call). */
const names: string[] = [];

/**
 * `name="value",...` in name order: the series' identity. Called for every update, so it sorts the
 * few names in place in a reused array instead of allocating arrays per call.
 */
function labelKey(labels: Labels): string {
  names.length = 0;
  for (const name in labels) {
    let i = names.length;
    names.push(name);
    for (; i > 0 && names[i - 1]! > name; i--) names[i] = names[i - 1]!;
    names[i] = name;
  }
  let key = '';
  for (const name of names) key += `${key === '' ? '' : ','}${name}="${labelValue(labels[name])}"`;
  return key;
}

function series(name: string, key: string, extra = ''): string {
  const all = [key, extra].filter(Boolean).join(',');
  return all ? `${name}{${all}}` : name;
}

interface Metric {
  readonly name: string;
  render(): string;
}

export class Counter implements Metric {
  private readonly values = new Map<string, number>();
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}
  inc(labels: Labels = {}, by = 1): void {
    const key = labelKey(labels);
    this.values.set(key, (this.values.get(key) ?? 0) + by);
  }
  get(labels: Labels = {}): number {
    return this.values.get(labelKey(labels)) ?? 0;
  }
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    for (const [key, value] of this.values) lines.push(`${series(this.name, key)} ${value}`);
    return lines.join('\n');
  }
}

export class Gauge implements Metric {
  private readonly values = new Map<string, number>();
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}
  set(labels: Labels, value: number): void {
    this.values.set(labelKey(labels), value);
  }
  get(labels: Labels = {}): number | undefined {
    return this.values.get(labelKey(labels));
  }
  /** Drops every series (a gauge whose label sets come and go, such as the apps file's version). */
  clear(): void {
    this.values.clear();
  }
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} gauge`];
    for (const [key, value] of this.values) lines.push(`${series(this.name, key)} ${value}`);
    return lines.join('\n');
  }
}

/**
 * Default buckets in ms: from 1 ms to 10 s, fine enough around 10–500 ms that a quantile read from
 * them (bench/worker-metrics.ts interpolates within a bucket) is off by a few ms, not by 100.
 */
export const LATENCY_BUCKETS_MS = [
  1, 2, 5, 10, 15, 20, 25, 30, 40, 50, 60, 75, 100, 125, 150, 200, 250, 300, 400, 500, 750, 1000, 1500, 2000, 2500, 5000, 10000,
];

export class Histogram implements Metric {
  private readonly series = new Map<string, { counts: number[]; sum: number; count: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly buckets: readonly number[] = LATENCY_BUCKETS_MS,
  ) {}
  observe(labels: Labels, value: number): void {
    const key = labelKey(labels);
    let s = this.series.get(key);
    if (!s) this.series.set(key, (s = { counts: new Array(this.buckets.length).fill(0), sum: 0, count: 0 }));
    for (let i = 0; i < this.buckets.length; i++) if (value <= this.buckets[i]!) s.counts[i]!++;
    s.sum += value;
    s.count++;
  }
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const [key, s] of this.series) {
      this.buckets.forEach((le, i) => lines.push(`${series(`${this.name}_bucket`, key, `le="${le}"`)} ${s.counts[i]}`));
      lines.push(`${series(`${this.name}_bucket`, key, 'le="+Inf"')} ${s.count}`);
      lines.push(`${series(`${this.name}_sum`, key)} ${s.sum}`, `${series(`${this.name}_count`, key)} ${s.count}`);
    }
    return lines.join('\n');
  }
}

export class MetricsRegistry {
  private readonly metrics = new Map<string, Metric>();
  private readonly collectors: Array<() => void> = [];

  /** Runs `collect` before each render: for gauges computed at scrape time (seconds until a credential expires). */
  onCollect(collect: () => void): void {
    this.collectors.push(collect);
  }

  counter(name: string, help: string): Counter {
    return this.register(name, () => new Counter(name, help));
  }
  gauge(name: string, help: string): Gauge {
    return this.register(name, () => new Gauge(name, help));
  }
  histogram(name: string, help: string, buckets?: readonly number[]): Histogram {
    return this.register(name, () => new Histogram(name, help, buckets));
  }
  render(): string {
    for (const collect of this.collectors) collect();
    return [...this.metrics.values()].map((m) => m.render()).join('\n') + '\n';
  }

  private register<M extends Metric>(name: string, create: () => M): M {
    const existing = this.metrics.get(name);
    if (existing) return existing as M;
    const metric = create();
    this.metrics.set(name, metric);
    return metric;
  }
}
