/** The decisions wiring: a describe() snapshot makes every wiring change visible in review. */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { rawAvroValueSerdes } from '../../../pipeline/serdes.ts';
import { buildDecisionsTopology } from '../../../pipeline/apps/decisions.ts';
import { TOPICS } from '../../../pipeline/topics.ts';
import { DecisionsHarness, brief } from '../../processors/harness.ts';
import type { PushTaskLedger } from '../../../processors/fan-out/ledger.ts';

/** The fused wiring test builds, never runs, the fan-out: its ledger is never called. */
const fanOutLedgerUnused = new Proxy({} as PushTaskLedger, {
  get: () => {
    throw new Error('the ledger is not used while wiring');
  },
});

const EXPECTED = `Topologies:
  Sub-topology: 0
    Source: persisted-source (topics: [t.im.message.persisted])
      --> persisted-ingest
    Source: presence-source (topics: [t.im.presence])
      --> presence-ingest
    Source: tokens-source (topics: [t.push.tokens])
      --> tokens-ingest
    Source: settings-source (topics: [t.push.settings])
      --> settings-ingest
    Processor: persisted-ingest (stores: [])
      --> online-filter
      <-- persisted-source
    Processor: presence-ingest (stores: [])
      --> online-filter, policy
      <-- presence-source
    Processor: tokens-ingest (stores: [])
      --> online-filter, policy
      <-- tokens-source
    Processor: settings-ingest (stores: [])
      --> policy
      <-- settings-source
    Processor: online-filter (stores: [online-filter-devices, online-filter-presence, online-filter-holds, online-filter-hold-timers])
      --> merge, outcomes-sink
      <-- persisted-ingest, presence-ingest, tokens-ingest
    Processor: merge (stores: [merge-windows, merge-window-timers])
      --> merged-in, outcomes-sink
      <-- online-filter
    Processor: merged-in (stores: [])
      --> policy
      <-- merge
    Processor: policy (stores: [policy-tokens, policy-settings, policy-quota-ledger, policy-deferred, policy-deferred-timers])
      --> dispatch-sink, outcomes-sink
      <-- merged-in, settings-ingest, tokens-ingest, presence-ingest
    Sink: dispatch-sink (topic: t.push.dispatch)
      <-- policy
    Sink: outcomes-sink (topic: t.push.outcomes)
      <-- online-filter, merge, policy
`;

/** With taps on, the same graph plus two sink nodes: the in-process hand-overs stay observable. */
const TAPS = `    Sink: candidates-tap (topic: t.push.candidates)
      <-- online-filter
    Sink: merged-tap (topic: t.push.merged)
      <-- merge
`;

describe('decisions topology', () => {
  test('describe() matches the reviewed wiring: one fused sub-topology', () => {
    assert.equal(buildDecisionsTopology({ valueSerdes: rawAvroValueSerdes(), topicPrefix: 't.' }).describe(), EXPECTED);
  });

  test('taps add push.candidates and push.merged sink nodes beside the in-process hand-overs', () => {
    const tapped = EXPECTED.replace('--> merge, outcomes-sink', '--> merge, outcomes-sink, candidates-tap').replace(
      '--> merged-in, outcomes-sink',
      '--> merged-in, outcomes-sink, merged-tap',
    );
    assert.equal(buildDecisionsTopology({ valueSerdes: rawAvroValueSerdes(), topicPrefix: 't.', taps: true }).describe(), tapped + TAPS);
  });

  test('fused (PUSH_FAN_OUT_FUSED): the policy hands dispatches to the fan-out in the same task; push.dispatch only as a tap, read for replays', () => {
    const fanOut = { vendors: { adapter: () => undefined, limits: () => undefined }, ledger: fanOutLedgerUnused };
    const fused = EXPECTED.replace(
      '      --> online-filter, policy\n      <-- presence-source',
      '      --> online-filter, policy, fan-out\n      <-- presence-source',
    )
      .replace('      --> dispatch-sink, outcomes-sink\n', '      --> dispatch-in, outcomes-sink\n')
      .replace(
        '    Sink: dispatch-sink (topic: t.push.dispatch)\n      <-- policy\n    Sink: outcomes-sink (topic: t.push.outcomes)\n      <-- online-filter, merge, policy\n',
        [
          '    Source: replay-source (topics: [t.push.dispatch])',
          '      --> replays',
          '    Processor: replays (stores: [])',
          '      --> dispatch-in',
          '      <-- replay-source',
          '    Processor: dispatch-in (stores: [])',
          '      --> fan-out',
          '      <-- policy, replays',
          '    Processor: fan-out (stores: [fan-out-parked, fan-out-retry-timers, fan-out-parked-by-age])',
          '      --> token-invalidations-sink, outcomes-sink',
          '      <-- dispatch-in, presence-ingest',
          '    Sink: token-invalidations-sink (topic: t.push.tokens)',
          '      <-- fan-out',
          '    Sink: outcomes-sink (topic: t.push.outcomes)',
          '      <-- online-filter, merge, policy, fan-out',
          '',
        ].join('\n'),
      );
    assert.notEqual(fused, EXPECTED);
    assert.equal(buildDecisionsTopology({ valueSerdes: rawAvroValueSerdes(), topicPrefix: 't.', fanOut }).describe(), fused);
    const tapped = buildDecisionsTopology({ valueSerdes: rawAvroValueSerdes(), topicPrefix: 't.', fanOut, taps: true }).describe();
    assert.match(tapped, /--> dispatch-sink, dispatch-in, outcomes-sink\n/);
    assert.match(tapped, /Sink: dispatch-sink \(topic: t\.push\.dispatch\)\n {6}<-- policy\n/);
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
    const { decisionsOptionsFromEnv } = await import('../../../pipeline/apps/decisions.ts');
    const options = decisionsOptionsFromEnv({
      PUSH_MERGE_WINDOW_MS: '3000',
      PUSH_MERGE_MODE: 'trailing-only',
      PUSH_HOLD_WINDOW_MS: '7000',
      PUSH_VENDOR_QUOTAS: 'vivo:*=10',
      PUSH_PARTITIONS: '8',
    });
    assert.equal(options.merge?.windowMs, 3_000);
    assert.equal(options.merge?.mode, 'trailing-only');
    assert.equal(options.onlineFilter?.holdWindowMs, 7_000);
    assert.deepEqual(options.policy?.quotas, { vivo: { '*': 10 } });
    assert.equal(options.policy?.partitionCount, 8);
    assert.throws(() => decisionsOptionsFromEnv({ PUSH_MERGE_WINDOW_MS: '10001' }), /PUSH_MERGE_WINDOW_MS/);
    assert.throws(() => decisionsOptionsFromEnv({ PUSH_HOLD_WINDOW_MS: '1000' }), /PUSH_HOLD_WINDOW_MS/);
  });
});

describe('decision taps', () => {
  /** One offline device, two messages of a chat within a merge window: a leading push, then one merged. */
  async function run(taps: boolean) {
    const h = DecisionsHarness.create({ taps });
    await h.token('u1', 'd1', 'fcm');
    await h.message('u1', 'c1');
    await h.advanceTo(1_000);
    await h.message('u1', 'c1');
    await h.advanceTo(10_000);
    const read = (key: 'candidates' | 'merged') =>
      h.driver.readAllOutputs<string, { seq: number; device_id: string }>(TOPICS[key].name).map((r) => `${r.value.device_id}#${r.value.seq}`);
    const result = { dispatches: h.dispatches().map(brief), candidates: read('candidates'), merged: read('merged') };
    await h.close();
    return result;
  }

  test('off (default): decisions hand over in-process and write neither tap topic', async () => {
    const { dispatches, candidates, merged } = await run(false);
    assert.deepEqual(dispatches, ['d1:c1#1 LEADING badge=1', 'd1:c1#2 TRAILING silent badge=2']);
    assert.deepEqual(candidates, []);
    assert.deepEqual(merged, []);
  });

  test('on: the same dispatches, and every hand-over is also on push.candidates and push.merged', async () => {
    const { dispatches, candidates, merged } = await run(true);
    assert.deepEqual(dispatches, ['d1:c1#1 LEADING badge=1', 'd1:c1#2 TRAILING silent badge=2']);
    assert.deepEqual(candidates, ['d1#1', 'd1#2']);
    assert.deepEqual(merged, ['d1#1', 'd1#2']);
  });
});
