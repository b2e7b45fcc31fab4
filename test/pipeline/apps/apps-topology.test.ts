/**
 * describe() snapshots of the fan-out, receipts, ClickHouse and campaign applications (decisions: see
 * decisions-topology.test.ts): every wiring change shows up here in review. Sub-topologies follow
 * the keys: a topic sits only where the key or the application changes.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { rawAvroValueSerdes } from '../../../pipeline/serdes.ts';
import { buildFanOutTopology } from '../../../pipeline/apps/fan-out.ts';
import { buildReceiptTopology } from '../../../pipeline/apps/receipts.ts';
import { buildClickhouseSinkTopology } from '../../../pipeline/apps/clickhouse.ts';
import { buildCampaignsTopology } from '../../../pipeline/apps/campaigns.ts';
import type { FanOutOptions } from '../../../processors/fan-out/options.ts';
import type { ReceiptTopologyOptions } from '../../../pipeline/apps/receipts.ts';
import type { PushEventWriter } from '../../../sinks/clickhouse/writer.ts';

const wiring = { valueSerdes: rawAvroValueSerdes(), topicPrefix: 't.' };
/** describe() never runs a processor, so the resources they would use are not needed here. */
const unused = <T>() => ({}) as T;

const lines = (...l: string[]) => l.join('\n') + '\n';

describe('application wiring', () => {
  test('fan-out: push.dispatch (and READs from im.presence) ─► fan-out ─► push.outcomes, push.tokens', () => {
    const topology = buildFanOutTopology({ ...wiring, fanOut: unused<Omit<FanOutOptions, 'outputs'>>() });
    assert.equal(
      topology.describe(),
      lines(
        'Topologies:',
        '  Sub-topology: 0',
        '    Source: dispatch-source (topics: [t.push.dispatch])',
        '      --> dispatch-in',
        '    Processor: dispatch-in (stores: [])',
        '      --> fan-out',
        '      <-- dispatch-source',
        '    Source: read-source (topics: [t.im.presence])',
        '      --> reads-in',
        '    Processor: reads-in (stores: [])',
        '      --> fan-out',
        '      <-- read-source',
        '    Processor: fan-out (stores: [fan-out-parked, fan-out-retry-timers, fan-out-parked-by-age])',
        '      --> outcomes-sink, token-invalidations-sink',
        '      <-- dispatch-in, reads-in',
        '    Sink: outcomes-sink (topic: t.push.outcomes)',
        '      <-- fan-out',
        '    Sink: token-invalidations-sink (topic: t.push.tokens)',
        '      <-- fan-out',
      ),
    );
  });

  test('receipts: two sub-topologies; raw callbacks keyed by their recipient join in-process, the by-uid and by-message topics where the key changes', () => {
    const topology = buildReceiptTopology({
      ...wiring,
      parsers: () => undefined,
      join: unused<ReceiptTopologyOptions['join']>(),
      tokens: unused<ReceiptTopologyOptions['tokens']>(),
    });
    assert.equal(
      topology.describe(),
      lines(
        'Topologies:',
        '  Sub-topology: 0',
        '    Source: uid-keyed (topics: [t.push.outcomes, t.push.tokens, t.push.receipts])',
        '      --> submission-index, token-lifecycle',
        '    Source: receipts-raw (topics: [t.push.receipts.raw])',
        '      --> receipt-parse',
        '    Source: receipts-by-uid (topics: [t.push.receipts.by-uid])',
        '      --> receipt-join-by-uid',
        '    Processor: submission-index (stores: [])',
        '      --> submission-index-out, receipt-join-by-uid',
        '      <-- uid-keyed',
        '    Sink: submission-index-out (topic: t.push.receipts.by-message)',
        '      <-- submission-index',
        '    Processor: receipt-parse (stores: [])',
        '      --> receipt-parse-out, receipt-parse-by-uid, receipt-join-by-uid',
        '      <-- receipts-raw',
        '    Sink: receipt-parse-out (topic: t.push.receipts.by-message)',
        '      <-- receipt-parse',
        '    Sink: receipt-parse-by-uid (topic: t.push.receipts.by-uid)',
        '      <-- receipt-parse',
        '    Processor: receipt-join-by-uid (stores: [receipt-join-by-uid-messages, receipt-join-by-uid-due])',
        '      --> push-receipts-by-uid',
        '      <-- submission-index, receipt-parse, receipts-by-uid',
        '    Sink: push-receipts-by-uid (topic: t.push.receipts)',
        '      <-- receipt-join-by-uid',
        '    Processor: token-lifecycle (stores: [token-lifecycle-tokens, token-lifecycle-stale-due])',
        '      --> token-invalidations',
        '      <-- uid-keyed',
        '    Sink: token-invalidations (topic: t.push.tokens)',
        '      <-- token-lifecycle',
        '  Sub-topology: 1',
        '    Source: by-message (topics: [t.push.receipts.by-message])',
        '      --> receipt-join',
        '    Processor: receipt-join (stores: [receipt-join-messages, receipt-join-due])',
        '      --> push-receipts',
        '      <-- by-message',
        '    Sink: push-receipts (topic: t.push.receipts)',
        '      <-- receipt-join',
      ),
    );
  });

  test('clickhouse: push.outcomes and push.receipts ─► clickhouse-sink', () => {
    const topology = buildClickhouseSinkTopology({ ...wiring, writer: unused<PushEventWriter>() });
    assert.equal(
      topology.describe(),
      lines(
        'Topologies:',
        '  Sub-topology: 0',
        '    Source: push-events (topics: [t.push.outcomes, t.push.receipts])',
        '      --> clickhouse-sink',
        '    Processor: clickhouse-sink (stores: [])',
        '      <-- push-events',
      ),
    );
  });

  test('campaigns: push.campaigns (key campaign_id) ─► campaign-expansion ─► push.requests (key uid), push.campaign-control', () => {
    const topology = buildCampaignsTopology({ ...wiring, expansion: { ratePerSecond: 1, maxUids: 1 } });
    assert.equal(
      topology.describe(),
      lines(
        'Topologies:',
        '  Sub-topology: 0',
        '    Source: campaigns-source (topics: [t.push.campaigns])',
        '      --> campaign-expansion',
        '    Processor: campaign-expansion (stores: [campaign-meta, campaign-uids])',
        '      --> requests-sink, campaign-control-sink',
        '      <-- campaigns-source',
        '    Sink: requests-sink (topic: t.push.requests)',
        '      <-- campaign-expansion',
        '    Sink: campaign-control-sink (topic: t.push.campaign-control)',
        '      <-- campaign-expansion',
      ),
    );
  });
});
