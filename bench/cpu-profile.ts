/**
 * Self-time share by package of a `.cpuprofile` written by `node --cpu-prof` (the workers take node
 * flags from PUSH_WORKER_NODE_ARGS, demo/environment.ts):
 *
 *   PUSH_WORKER_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/push-prof' npm run bench -- --rates 1000 --no-ceilings
 *   npx tsx bench/cpu-profile.ts /tmp/push-prof/*.cpuprofile [--top 25] [--json] [--root DIR]
 *
 * Each sample's time (its timeDelta) goes to the function on top of the stack, and that function to
 * a group: a package under node_modules (kafkajs, avsc, mysql2, undici, ...), a folder of this
 * repository (topology/, processors/, sinks/, pipeline/, ...), node's own code (undici bundled in node
 * counts as undici; the microtask queue as microtasks), or V8's pseudo-frames ((garbage collector),
 * (idle), (program)). Several files are summed. `--root` names the checkout the profiled workers ran
 * from when it is not this one (its files would otherwise count as `(other)`).
 *
 * The same samples are also summed by activity (`ACTIVITIES`): each busy sample goes to the first
 * activity whose code is anywhere on its stack, so a socket write under a MySQL query counts as
 * MySQL and a serializer under a transaction's produce as Kafka produce. That says what a worker's
 * cycles are spent on (a fetch, a claim, a vendor call, a commit), which self time by package
 * spreads over node's streams, buffers and the native socket calls.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: readonly number[];
}

export interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  /** µs since the previous sample, one per sample. */
  readonly timeDeltas: readonly number[];
}

export interface ProfileSummary {
  /** Sampled time, ms (idle included). */
  readonly totalMs: number;
  /** Self time per group, ms, largest first, with its share of the total and of the busy (non-idle) time. */
  readonly groups: Array<{ readonly group: string; readonly ms: number; readonly share: number; readonly busyShare: number }>;
  /** The functions with the most self time. */
  readonly functions: Array<{ readonly fn: string; readonly group: string; readonly ms: number; readonly share: number }>;
  /** Busy time per activity (`ACTIVITIES`, then GC, (program) and `other`), ms, largest first, with its share of the busy time. */
  readonly activities: Array<{ readonly activity: string; readonly ms: number; readonly busyShare: number }>;
}

/**
 * What a worker's time is spent on, in the order a stack is matched against (first match wins):
 * a frame's url and function name against the pattern. The transaction's own code (topology/eos.ts,
 * task-production.ts, task-commits.ts) counts as Kafka produce, as the requests it sends.
 */
export const ACTIVITIES: ReadonlyArray<readonly [string, RegExp]> = [
  ['MySQL', /node_modules\/mysql2\/|\/sinks\/mysql\//],
  ['vendor calls and receipt callbacks', /undici|\/sinks\/vendors\/|node:http2|node:_http|\/receipts\//],
  [
    'Kafka produce and transactions',
    /kafkajs\/src\/(producer|protocol\/requests\/(produce|addPartitionsToTxn|addOffsetsToTxn|txnOffsetCommit|endTxn|initProducerId))|\/topology\/(task-production|eos|task-commits)\.ts/,
  ],
  ['Kafka fetch and records', /kafkajs\/src\/(consumer|protocol\/requests\/fetch|protocol\/recordBatch)/],
  ['Kafka connections', /kafkajs\/src\/(network|broker|cluster)/],
  ['ClickHouse', /@clickhouse|\/sinks\/clickhouse\//],
  ['serdes', /node_modules\/avsc\/|confluent-schema-registry|\/(topology|pipeline)\/(registry-)?serdes\.ts/],
  ['processors', /\/processors\//],
  ['runtime (topology/)', /\/topology\//],
  ['metrics', /\/sinks\/metrics\//],
];

function activityOf(stack: readonly ProfileNode['callFrame'][]): string {
  const leaf = stack[0]?.functionName;
  if (leaf === '(garbage collector)' || leaf === '(program)') return leaf;
  for (const [activity, pattern] of ACTIVITIES) if (stack.some((f) => pattern.test(`${f.url} ${f.functionName}`))) return activity;
  return 'other';
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PSEUDO = new Set(['(garbage collector)', '(idle)', '(program)', '(root)']);

/** The group one frame's self time belongs to. */
export function groupOf(frame: { functionName: string; url: string }, root = ROOT): string {
  if (PSEUDO.has(frame.functionName)) return frame.functionName;
  const url = frame.url;
  if (url === '') return frame.functionName === 'runMicrotasks' ? 'microtasks' : '(native: V8 and node built-ins)';
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const parts = url.slice(modules + '/node_modules/'.length).split('/');
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  if (url.startsWith('node:')) {
    if (url.includes('/deps/undici/')) return 'undici';
    if (url.startsWith('node:internal/process/task_queues')) return 'microtasks';
    return 'node (built-in modules)';
  }
  const path = url.startsWith('file://') ? fileURLToPath(url) : url;
  const base = root.endsWith('/') ? root : `${root}/`;
  if (path.startsWith(base)) {
    const relative = path.slice(base.length);
    const slash = relative.indexOf('/');
    return slash < 0 ? relative : `${relative.slice(0, slash)}/`;
  }
  return '(other)';
}

export function summarizeProfiles(profiles: readonly CpuProfile[], top = 20, root = ROOT): ProfileSummary {
  const groupMs = new Map<string, number>();
  const fnMs = new Map<string, { group: string; ms: number }>();
  const activityMs = new Map<string, number>();
  let totalMs = 0;
  for (const profile of profiles) {
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parentOf = new Map<number, number>();
    for (const n of profile.nodes) for (const child of n.children ?? []) parentOf.set(child, n.id);
    const stackOf = (id: number) => {
      const stack: ProfileNode['callFrame'][] = [];
      for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) stack.push(byId.get(at)!.callFrame);
      return stack;
    };
    profile.samples.forEach((id, i) => {
      const node = byId.get(id);
      if (!node) return;
      const ms = (profile.timeDeltas[i] ?? 0) / 1000;
      if (ms <= 0) return;
      totalMs += ms;
      const group = groupOf(node.callFrame, root);
      groupMs.set(group, (groupMs.get(group) ?? 0) + ms);
      if (group !== '(idle)') {
        const activity = activityOf(stackOf(id));
        activityMs.set(activity, (activityMs.get(activity) ?? 0) + ms);
      }
      const { functionName, url, lineNumber } = node.callFrame;
      const fn =
        `${functionName || '(anonymous)'} ${url ? `${url.replace(`file://${root}`, '').replace(/^(.*\/)?node_modules\//, '')}:${lineNumber + 1}` : ''}`.trim();
      const entry = fnMs.get(fn) ?? { group, ms: 0 };
      entry.ms += ms;
      fnMs.set(fn, entry);
    });
  }
  const busyMs = totalMs - (groupMs.get('(idle)') ?? 0);
  const share = (ms: number, of: number) => (of > 0 ? Math.round((ms / of) * 1000) / 1000 : 0);
  return {
    totalMs: Math.round(totalMs),
    groups: [...groupMs.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([group, ms]) => ({ group, ms: Math.round(ms), share: share(ms, totalMs), busyShare: group === '(idle)' ? 0 : share(ms, busyMs) })),
    functions: [...fnMs.entries()]
      .sort((a, b) => b[1].ms - a[1].ms)
      .slice(0, top)
      .map(([fn, { group, ms }]) => ({ fn, group, ms: Math.round(ms), share: share(ms, totalMs) })),
    activities: [...activityMs.entries()].sort((a, b) => b[1] - a[1]).map(([activity, ms]) => ({ activity, ms: Math.round(ms), busyShare: share(ms, busyMs) })),
  };
}

export function formatSummary(s: ProfileSummary): string {
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`.padStart(7);
  return [
    `sampled ${(s.totalMs / 1000).toFixed(1)} s; self time by group (share of all samples, share of the busy ones: idle excluded)`,
    ...s.groups.map((g) =>
      `  ${g.group.padEnd(34)} ${String(g.ms).padStart(8)} ms  ${pct(g.share)}  ${g.group === '(idle)' ? '' : pct(g.busyShare)}`.trimEnd(),
    ),
    '',
    'busy time by activity (each sample goes to the first of these found on its stack):',
    ...s.activities.map((a) => `  ${a.activity.padEnd(34)} ${String(a.ms).padStart(8)} ms  ${pct(a.busyShare)}`),
    '',
    `top ${s.functions.length} functions by self time:`,
    ...s.functions.map((f) => `  ${pct(f.share)}  ${f.group.padEnd(26)} ${f.fn}`),
  ].join('\n');
}

function main(args: string[]): number {
  const files = args.filter((a, i) => !a.startsWith('--') && args[i - 1] !== '--top' && args[i - 1] !== '--root');
  if (files.length === 0 || args.includes('--help')) {
    console.log('usage: npx tsx bench/cpu-profile.ts FILE.cpuprofile [FILE ...] [--top N] [--json] [--root DIR]');
    return files.length === 0 && !args.includes('--help') ? 1 : 0;
  }
  const topIndex = args.indexOf('--top');
  const top = topIndex >= 0 ? Math.max(1, Number(args[topIndex + 1]) || 20) : 20;
  const rootIndex = args.indexOf('--root');
  const root = rootIndex >= 0 && args[rootIndex + 1] ? resolve(args[rootIndex + 1]!) + '/' : ROOT;
  const summary = summarizeProfiles(
    files.map((f) => JSON.parse(readFileSync(f, 'utf8')) as CpuProfile),
    top,
    root,
  );
  console.log(args.includes('--json') ? JSON.stringify(summary, null, 2) : formatSummary(summary));
  return 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) process.exit(main(process.argv.slice(2)));
