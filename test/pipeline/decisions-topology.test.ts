/** The decisions wiring: a describe() snapshot makes every wiring change visible in review. */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { buildDecisionsTopology, rawAvroValueSerdes } from '../../pipeline/decisions.ts';

const EXPECTED = `Topologies:
  Sub-topology: 0
    Source: persisted-source (topics: [t.im.message.persisted])
      --> online-filter
    Source: presence-source (topics: [t.im.presence])
      --> online-filter, policy
    Source: tokens-source (topics: [t.push.tokens])
      --> online-filter, policy
    Source: settings-source (topics: [t.push.settings])
      --> policy
    Source: merged-source (topics: [t.push.merged])
      --> policy
    Processor: online-filter (stores: [online-filter-devices, online-filter-presence, online-filter-holds, online-filter-hold-timers])
      --> candidates-sink, outcomes-sink
      <-- persisted-source, presence-source, tokens-source
    Processor: policy (stores: [policy-tokens, policy-settings, policy-quota-ledger, policy-deferred, policy-deferred-timers])
      --> dispatch-sink, outcomes-sink
      <-- merged-source, settings-source, tokens-source, presence-source
    Sink: candidates-sink (topic: t.push.candidates)
      <-- online-filter
    Sink: dispatch-sink (topic: t.push.dispatch)
      <-- policy
    Sink: outcomes-sink (topic: t.push.outcomes)
      <-- online-filter, policy
  Sub-topology: 1
    Source: candidates-source (topics: [t.push.candidates])
      --> merge
    Processor: merge (stores: [merge-windows, merge-window-timers])
      --> merged-sink, merge-outcomes-sink
      <-- candidates-source
    Sink: merged-sink (topic: t.push.merged)
      <-- merge
    Sink: merge-outcomes-sink (topic: t.push.outcomes)
      <-- merge
`;

describe('decisions topology', () => {
  test('describe() matches the reviewed wiring', () => {
    assert.equal(buildDecisionsTopology({ valueSerdes: rawAvroValueSerdes(), topicPrefix: 't.' }).describe(), EXPECTED);
  });

  test('invalid stage options fail while building, naming the key', () => {
    assert.throws(() => buildDecisionsTopology({ valueSerdes: rawAvroValueSerdes(), onlineFilter: { holdWindowMs: 4_000 } }), /PUSH_HOLD_WINDOW_MS/);
    assert.throws(() => buildDecisionsTopology({ valueSerdes: rawAvroValueSerdes(), onlineFilter: { holdWindowMs: 31_000 } }), /PUSH_HOLD_WINDOW_MS/);
    assert.throws(() => buildDecisionsTopology({ valueSerdes: rawAvroValueSerdes(), merge: { windowMs: 12_000 } }), /PUSH_MERGE_WINDOW_MS/);
    assert.throws(() => buildDecisionsTopology({ valueSerdes: rawAvroValueSerdes(), policy: { partitionCount: -1 } }), /PUSH_PARTITIONS/);
  });
});

describe('decisions options from the environment', () => {
  test('PUSH_* keys reach the stages; a bad one fails naming the key', async () => {
    const { decisionsOptionsFromEnv } = await import('../../pipeline/decisions.ts');
    const options = decisionsOptionsFromEnv({ PUSH_MERGE_WINDOW_MS: '3000', PUSH_MERGE_MODE: 'trailing-only', PUSH_HOLD_WINDOW_MS: '7000', PUSH_VENDOR_QUOTAS: 'vivo:*=10', PUSH_PARTITIONS: '8' });
    assert.equal(options.merge?.windowMs, 3_000);
    assert.equal(options.merge?.mode, 'trailing-only');
    assert.equal(options.onlineFilter?.holdWindowMs, 7_000);
    assert.deepEqual(options.policy?.quotas, { vivo: { '*': 10 } });
    assert.equal(options.policy?.partitionCount, 8);
    assert.throws(() => decisionsOptionsFromEnv({ PUSH_MERGE_WINDOW_MS: '10001' }), /PUSH_MERGE_WINDOW_MS/);
    assert.throws(() => decisionsOptionsFromEnv({ PUSH_HOLD_WINDOW_MS: '1000' }), /PUSH_HOLD_WINDOW_MS/);
  });
});
