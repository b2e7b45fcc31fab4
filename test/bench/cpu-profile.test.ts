/**
 * bench/cpu-profile.ts: self time of a `node --cpu-prof` profile grouped by package and by folder
 * of this repository, as the profile figures were read.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { groupOf, summarizeProfiles, type CpuProfile } from '../../bench/cpu-profile.ts';

const ROOT = '/work/app/';

test('frames are grouped by package, repository folder, node internals and V8 pseudo-frames', () => {
  const cases: Array<[string, string, string]> = [
    ['encode', 'file:///work/app/node_modules/kafkajs/src/protocol/encoder.js', 'kafkajs'],
    ['deserialize', 'file:///work/app/node_modules/@kafkajs/confluent-schema-registry/dist/x.js', '@kafkajs/confluent-schema-registry'],
    ['process', 'file:///work/app/topology/task.ts', 'topology/'],
    ['decide', 'file:///work/app/processors/policy/policy.ts', 'processors/'],
    ['fetch', 'node:internal/deps/undici/undici', 'undici'],
    ['processTicksAndRejections', 'node:internal/process/task_queues', 'microtasks'],
    ['writeGeneric', 'node:internal/stream_base_commons', 'node (built-in modules)'],
    ['(garbage collector)', '', '(garbage collector)'],
    ['(idle)', '', '(idle)'],
    ['(program)', '', '(program)'],
    ['parse', '', '(native: V8 and node built-ins)'],
  ];
  for (const [functionName, url, group] of cases) assert.equal(groupOf({ functionName, url }, ROOT), group, `${functionName} ${url}`);
});

test("self time is the samples' time deltas, summed over profiles; busy share leaves idle out", () => {
  const frame = (id: number, functionName: string, url: string) => ({ id, callFrame: { functionName, url, lineNumber: 0 } });
  const profile: CpuProfile = {
    nodes: [
      frame(1, '(root)', ''),
      frame(2, '(idle)', ''),
      frame(3, 'encode', 'file:///work/app/node_modules/kafkajs/a.js'),
      frame(4, '(garbage collector)', ''),
      frame(5, 'process', 'file:///work/app/topology/task.ts'),
    ],
    samples: [2, 3, 3, 4, 5, 2],
    timeDeltas: [10_000, 20_000, 20_000, 10_000, 20_000, 20_000],
  };
  const s = summarizeProfiles([profile, profile], 3, ROOT);
  assert.equal(s.totalMs, 200);
  const g = Object.fromEntries(s.groups.map((x) => [x.group, x]));
  assert.equal(g.kafkajs!.ms, 80);
  assert.equal(g.kafkajs!.share, 0.4);
  assert.equal(g.kafkajs!.busyShare, 0.571); // 80 of 140 busy ms
  assert.equal(g['(idle)']!.ms, 60);
  assert.equal(g['(garbage collector)']!.busyShare, 0.143);
  assert.equal(s.groups[0]!.group, 'kafkajs');
  assert.equal(s.functions.length, 3);
  assert.match(s.functions[0]!.fn, /^encode kafkajs\/a\.js:1$/);
});

test('busy time goes to the first activity found anywhere on the stack; idle goes nowhere', () => {
  const frame = (id: number, functionName: string, url: string, children: number[] = []) => ({ id, callFrame: { functionName, url, lineNumber: 0 }, children });
  const profile: CpuProfile = {
    nodes: [
      frame(1, '(root)', '', [2, 3, 6, 8]),
      frame(2, '(idle)', ''),
      // a socket write under a MySQL query: MySQL, not node's streams
      frame(3, 'claim', 'file:///work/app/sinks/mysql/tasks.ts', [4]),
      frame(4, 'write', 'file:///work/app/node_modules/mysql2/lib/base/connection.js', [5]),
      frame(5, 'writeBuffer', ''),
      // an Avro serializer under a transaction's produce: Kafka produce, the first activity listed
      frame(6, 'send', 'file:///work/app/node_modules/kafkajs/src/producer/sendMessages.js', [7]),
      frame(7, 'toBuffer', 'file:///work/app/node_modules/avsc/lib/types.js'),
      frame(8, '(garbage collector)', ''),
    ],
    samples: [2, 5, 5, 7, 8],
    timeDeltas: [50_000, 10_000, 10_000, 20_000, 5_000],
  };
  const a = Object.fromEntries(summarizeProfiles([profile], 3, ROOT).activities.map((x) => [x.activity, x]));
  assert.deepEqual(Object.keys(a).sort(), ['(garbage collector)', 'Kafka produce and transactions', 'MySQL']);
  assert.equal(a.MySQL!.ms, 20);
  assert.equal(a['Kafka produce and transactions']!.ms, 20);
  assert.equal(a.MySQL!.busyShare, 0.444); // 20 of 45 busy ms
});
