import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../topology/builder.ts';
import { keyValueStore, timerStore } from '../../topology/stores.ts';
import { withStores } from '../../topology/api.ts';
import { stringSerde } from '../../topology/serdes.ts';
import { ConfigError } from '../../common/errors.ts';

const serdes = { keySerde: stringSerde, valueSerde: stringSerde };
const noop = () => ({ process() {} });

function pipelineLike() {
  return new TopologyBuilder()
    .addSource('persisted-source', { topics: ['im.message.persisted'], ...serdes })
    .addSource('presence-source', { topics: ['im.presence'], ...serdes })
    .addProcessor('online-filter', noop, 'persisted-source', 'presence-source')
    .addStateStore(keyValueStore('device-presence'), 'online-filter')
    .addSink('candidates-sink', { topic: 'push.candidates', ...serdes }, 'online-filter')
    .addSource('candidates-source', { topics: ['push.candidates'], ...serdes })
    .addProcessor('merge', noop, 'candidates-source')
    .addProcessor('merge-audit', noop, 'candidates-source')
    .addStateStore(keyValueStore('merge-windows'), 'merge', 'merge-audit')
    .addSink('merged-sink', { topic: 'push.merged', ...serdes }, 'merge')
    .build();
}

describe('TopologyBuilder', () => {
  test('describe() prints sub-topologies joined by sources and shared stores', () => {
    assert.equal(
      pipelineLike().describe(),
      [
        'Topologies:',
        '  Sub-topology: 0',
        '    Source: persisted-source (topics: [im.message.persisted])',
        '      --> online-filter',
        '    Source: presence-source (topics: [im.presence])',
        '      --> online-filter',
        '    Processor: online-filter (stores: [device-presence])',
        '      --> candidates-sink',
        '      <-- persisted-source, presence-source',
        '    Sink: candidates-sink (topic: push.candidates)',
        '      <-- online-filter',
        '  Sub-topology: 1',
        '    Source: candidates-source (topics: [push.candidates])',
        '      --> merge, merge-audit',
        '    Processor: merge (stores: [merge-windows])',
        '      --> merged-sink',
        '      <-- candidates-source',
        '    Processor: merge-audit (stores: [merge-windows])',
        '      <-- candidates-source',
        '    Sink: merged-sink (topic: push.merged)',
        '      <-- merge',
        '',
      ].join('\n'),
    );
  });

  test('two processors sharing only a store land in one sub-topology', () => {
    const topology = new TopologyBuilder()
      .addSource('a-source', { topics: ['a'], ...serdes })
      .addSource('b-source', { topics: ['b'], ...serdes })
      .addProcessor('a-proc', noop, 'a-source')
      .addProcessor('b-proc', noop, 'b-source')
      .addStateStore(keyValueStore('shared'), 'a-proc', 'b-proc')
      .build();
    assert.equal(topology.subtopologies.length, 1);
    assert.deepEqual(topology.subtopologies[0]!.sourceTopics, ['a', 'b']);
  });

  test('addProcessor registers and connects the stores its supplier declares; a store declared by two is shared', () => {
    const shared = keyValueStore('shared');
    const topology = new TopologyBuilder()
      .addSource('a-source', { topics: ['a'], ...serdes })
      .addSource('b-source', { topics: ['b'], ...serdes })
      .addProcessor('a-proc', withStores(noop, [shared, timerStore('a-timers', { changelog: false })]), 'a-source')
      .addProcessor('b-proc', withStores(noop, [shared]), 'b-source')
      .build();
    assert.deepEqual([...topology.stores.keys()], ['shared', 'a-timers']);
    assert.equal(topology.subtopologies.length, 1);
    assert.deepEqual(
      topology.subtopologies[0]!.stores.map((s) => s.name),
      ['shared', 'a-timers'],
    );
    assert.match(topology.describe(), /Processor: a-proc \(stores: \[shared, a-timers\]\)/);
    assert.match(topology.describe(), /Processor: b-proc \(stores: \[shared\]\)/);
  });

  test('a declared store may also be added with addStateStore under the same definition', () => {
    const timers = timerStore('timers');
    const topology = new TopologyBuilder()
      .addSource('s', { topics: ['t'], ...serdes })
      .addProcessor('p', withStores(noop, [timers]), 's')
      .addProcessor('q', noop, 's')
      .addStateStore(timerStore('timers'), 'q')
      .build();
    assert.deepEqual([...topology.stores.values()], [timers]);
    assert.match(topology.describe(), /Processor: q \(stores: \[timers\]\)/);
  });

  const invalid: Array<[string, () => unknown, RegExp]> = [
    ['non-kebab node name', () => new TopologyBuilder().addSource('Bad_Name', { topics: ['t'], ...serdes }), /kebab-case/],
    ['duplicate node', () => new TopologyBuilder().addSource('s', { topics: ['t'], ...serdes }).addSource('s', { topics: ['u'], ...serdes }), /already exists/],
    ['topic read twice', () => new TopologyBuilder().addSource('s', { topics: ['t'], ...serdes }).addSource('r', { topics: ['t'], ...serdes }), /already read/],
    ['missing parent', () => new TopologyBuilder().addProcessor('p', noop, 'nope'), /does not exist/],
    [
      'non-kebab store',
      () =>
        new TopologyBuilder()
          .addSource('s', { topics: ['t'], ...serdes })
          .addProcessor('p', noop, 's')
          .addStateStore(keyValueStore('Counts'), 'p'),
      /kebab-case/,
    ],
    ['store on unknown processor', () => new TopologyBuilder().addStateStore(keyValueStore('counts'), 'ghost'), /no processor named ghost/],
    [
      'a store declared twice with different kinds',
      () =>
        new TopologyBuilder()
          .addSource('s', { topics: ['t'], ...serdes })
          .addProcessor('p', withStores(noop, [keyValueStore('counts')]), 's')
          .addProcessor('q', withStores(noop, [timerStore('counts')]), 's'),
      /store counts: processor q declares it with another kind \(timer, registered: kv\)/,
    ],
    [
      'a store declared twice with different changelog backing',
      () =>
        new TopologyBuilder()
          .addSource('s', { topics: ['t'], ...serdes })
          .addProcessor('p', withStores(noop, [timerStore('due')]), 's')
          .addStateStore(timerStore('due', { changelog: false }), 'p'),
      /addStateStore declares it with another changelog backing/,
    ],
    [
      'a store declared twice with different serdes',
      () =>
        new TopologyBuilder()
          .addSource('s', { topics: ['t'], ...serdes })
          .addProcessor('p', withStores(noop, [keyValueStore('counts')]), 's')
          .addProcessor('q', withStores(noop, [keyValueStore('counts')]), 's'),
      /another serde/,
    ],
    [
      'a declared store with a non-kebab name',
      () => new TopologyBuilder().addSource('s', { topics: ['t'], ...serdes }).addProcessor('p', withStores(noop, [keyValueStore('Counts')]), 's'),
      /kebab-case/,
    ],
    ['source without children', () => new TopologyBuilder().addSource('s', { topics: ['t'], ...serdes }).build(), /no children/],
  ];
  for (const [name, build, message] of invalid) {
    test(`rejects ${name}`, () => assert.throws(build, (e: unknown) => e instanceof ConfigError && message.test(e.message)));
  }
});
