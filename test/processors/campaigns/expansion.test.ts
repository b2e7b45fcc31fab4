/**
 * The campaign expansion (processors/campaigns/expansion.ts) in the TopologyTestDriver with the
 * real Avro schemas: one request per distinct uid at the configured rate, cancellation, the rules
 * that send a campaign to the DLQ, and progress reported before each commit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { buildCampaignsTopology, uidFileReader } from '../../../pipeline/apps/campaigns.ts';
import { rawAvroValueSerdes } from '../../../pipeline/serdes.ts';
import { topicName } from '../../../pipeline/topics.ts';
import { TopologyTestDriver } from '../../../topology/test-driver.ts';
import type { CampaignProgress } from '../../../processors/campaigns/expansion.ts';
import { cancelRecord, type PushCampaignRecord, type PushRequestRecord } from '../../../processors/campaigns/records.ts';
import type { ExpansionPace } from '../../../processors/campaigns/pace.ts';

const CAMPAIGNS = topicName('campaigns');
const REQUESTS = topicName('requests');
const CONTROL = topicName('campaignControl');

function campaign(id: string, uids: string[], extra: Partial<PushCampaignRecord> = {}): PushCampaignRecord {
  return {
    campaign_id: id,
    action: 'CREATE',
    sender: 'marketing',
    app_id: 'im.demo',
    category: 'CAMPAIGN',
    priority: 'LOW',
    title: 'Sale',
    body: 'Today only',
    template_id: null,
    template_params: {},
    data: { link: 'app://sale' },
    collapse_key: 'sale',
    expire_at: null,
    uids,
    uid_file: null,
    requested_at: 1_000,
    ...extra,
  };
}

function harness(options: { rate?: number; chunk?: number; uidDir?: string; maxUids?: number; pace?: ExpansionPace } = {}) {
  const progress: CampaignProgress[] = [];
  const reported = { expanding: new Map<string, number>(), expanded: 0 };
  const topology = buildCampaignsTopology({
    valueSerdes: rawAvroValueSerdes(),
    expansion: {
      ratePerSecond: options.rate ?? 1_000,
      maxUids: options.maxUids ?? 1_000,
      chunkSize: options.chunk ?? 10,
      tickMs: 100,
      ...(options.uidDir ? { readUidFile: uidFileReader(options.uidDir) } : {}),
      ...(options.pace ? { pace: options.pace } : {}),
    },
    progress: { write: async (p) => void progress.push(...p) },
    listener: { expanding: (task, n) => reported.expanding.set(task, n), expanded: (n) => (reported.expanded += n) },
  });
  const driver = new TopologyTestDriver(topology, { startWallClockMs: 10_000, dlqTopic: 'push.dlq' });
  const requests = () => driver.readAllOutputs<string, PushRequestRecord>(REQUESTS);
  return { driver, progress, requests, reported };
}

const uids = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `u-${from + i}`);

test('a campaign becomes one request per distinct uid, with the campaign id and a per-user idempotency key', async () => {
  const { driver, progress, requests } = harness();
  await driver.pipeInput(CAMPAIGNS, 'c-1', campaign('c-1', [...uids(25), 'u-3', 'u-7']));
  assert.equal(requests().length, 0, 'nothing before the punctuator runs');
  await driver.advanceWallClockTime(100);
  const out = requests();
  assert.deepEqual(
    out.map((r) => r.key),
    uids(25),
  );
  const first = out[0]!.value;
  assert.equal(first.uid, 'u-0');
  assert.equal(first.idempotency_key, 'c-1:u-0');
  assert.equal(first.campaign_id, 'c-1');
  assert.equal(first.sender, 'marketing');
  assert.equal(first.category, 'CAMPAIGN');
  assert.equal(first.title, 'Sale');
  assert.deepEqual(first.data, { link: 'app://sale' });
  assert.equal(first.device_id, null);
  assert.equal(first.requested_at, 1_000);
  const last = progress.at(-1)!;
  assert.deepEqual([last.state, last.total, last.expanded], ['done', 25, 25]);
  await driver.advanceWallClockTime(1_000);
  assert.equal(requests().length, 0, 'a finished campaign produces nothing more');
  await driver.close();
});

test('expansion keeps to the rate, also below a chunk per tick, and a repeated CREATE changes nothing', async () => {
  const { driver, requests } = harness({ rate: 200, chunk: 10 }); // 20 uids per 100 ms tick
  await driver.pipeInput(CAMPAIGNS, 'c-2', campaign('c-2', uids(100)));
  await driver.advanceWallClockTime(100);
  assert.equal(requests().length, 20);
  await driver.pipeInput(CAMPAIGNS, 'c-2', campaign('c-2', uids(100, 500)));
  await driver.advanceWallClockTime(100);
  const second = requests();
  assert.deepEqual(
    second.map((r) => r.key),
    uids(20, 20),
    'the retried CREATE is ignored, the first list goes on',
  );
  for (let i = 0; i < 10; i++) await driver.advanceWallClockTime(100);
  assert.equal(requests().length, 60);
  await driver.close();

  const slow = harness({ rate: 30, chunk: 10 }); // 3 uids per tick: a chunk takes four ticks
  await slow.driver.pipeInput(CAMPAIGNS, 'c-2b', campaign('c-2b', uids(25)));
  const perTick: number[] = [];
  for (let i = 0; i < 10; i++) {
    await slow.driver.advanceWallClockTime(100);
    perTick.push(slow.requests().length);
  }
  assert.deepEqual(perTick, [3, 3, 3, 3, 3, 3, 3, 3, 1, 0]);
  assert.deepEqual(slow.progress.at(-1)!.state, 'done');
  await slow.driver.close();
});

test('the expansion reports the campaigns it holds as expanding and the uids it expanded, and 0 campaigns once closed', async () => {
  const { driver, requests, reported } = harness({ rate: 200, chunk: 10 }); // 20 uids per tick
  await driver.pipeInput(CAMPAIGNS, 'c-m1', campaign('c-m1', uids(30)));
  await driver.pipeInput(CAMPAIGNS, 'c-m2', campaign('c-m2', uids(50, 100)));
  await driver.advanceWallClockTime(100);
  assert.deepEqual([...reported.expanding.values()], [2]);
  assert.equal(reported.expanded, 20);
  for (let i = 0; i < 3; i++) await driver.advanceWallClockTime(100);
  assert.equal(reported.expanded, 80);
  assert.equal(requests().length, 80);
  assert.deepEqual([...reported.expanding.values()], [0], 'both campaigns are done');
  await driver.pipeInput(CAMPAIGNS, 'c-m3', campaign('c-m3', uids(500, 1000)));
  await driver.advanceWallClockTime(100);
  assert.deepEqual([...reported.expanding.values()], [1]);
  await driver.close();
  assert.deepEqual([...reported.expanding.values()], [0], 'a closed task holds nothing');
});

test('expansion follows the pace: a share of the rate per tick, fractions carried over, the full rate once the pace allows it', async () => {
  let share = 0.1;
  const { driver, requests } = harness({ rate: 200, chunk: 10, pace: { share: () => share } }); // 20 uids per tick at the full rate
  await driver.pipeInput(CAMPAIGNS, 'c-p', campaign('c-p', uids(100)));
  const perTick: number[] = [];
  const tick = async () => {
    await driver.advanceWallClockTime(100);
    perTick.push(requests().length);
  };
  for (let i = 0; i < 3; i++) await tick(); // 2 a tick
  share = 0.025; // 0.5 a tick: one every other tick
  for (let i = 0; i < 4; i++) await tick();
  share = 1;
  for (let i = 0; i < 5; i++) await tick();
  assert.deepEqual(perTick, [2, 2, 2, 0, 1, 0, 1, 20, 20, 20, 20, 12]); // 6 + 2 + 80, the last 12 of 100
  await driver.close();
});

test('a CANCEL stops the rest at once, is announced on push.campaign-control and makes a later CREATE of the id a no-op', async () => {
  const { driver, progress, requests } = harness({ rate: 100, chunk: 10 });
  await driver.pipeInput(CAMPAIGNS, 'c-3', campaign('c-3', uids(100)));
  await driver.advanceWallClockTime(100);
  assert.equal(requests().length, 10);
  await driver.pipeInput(CAMPAIGNS, 'c-3', cancelRecord('c-3', 'marketing', 20_000));
  const control = driver.readAllOutputs<string, PushCampaignRecord>(CONTROL);
  assert.equal(control.length, 1);
  assert.equal(control[0]!.key, 'c-3');
  assert.equal(control[0]!.value.action, 'CANCEL');
  assert.deepEqual(control[0]!.value.uids, []);
  for (let i = 0; i < 20; i++) await driver.advanceWallClockTime(100);
  assert.equal(requests().length, 0);
  const last = progress.at(-1)!;
  assert.deepEqual([last.state, last.total, last.expanded], ['cancelled', 100, 10]);
  assert.equal(last.cancelledAt, driver.wallClockTimeMs() - 2_000);

  // Cancelled before it was created (the CANCEL overtook it): never expanded.
  await driver.pipeInput(CAMPAIGNS, 'c-4', cancelRecord('c-4', 'marketing', 20_000));
  await driver.pipeInput(CAMPAIGNS, 'c-4', campaign('c-4', uids(5)));
  await driver.advanceWallClockTime(500);
  assert.equal(requests().length, 0);
  await driver.close();
});

test('a campaign breaking a rule goes to the DLQ naming the field; another sender cannot cancel it', async () => {
  const { driver, requests } = harness({ maxUids: 10 });
  await driver.pipeInput(CAMPAIGNS, 'c-5', campaign('c-5', uids(11)));
  await driver.pipeInput(CAMPAIGNS, 'c-6', campaign('c-6', ['u-1', '']));
  await driver.pipeInput(CAMPAIGNS, 'c-7', campaign('c-7', ['u-1'], { uid_file: 'list.txt' }));
  await driver.pipeInput(CAMPAIGNS, 'other-key', campaign('c-8', ['u-1']));
  await driver.pipeInput(CAMPAIGNS, 'c-9', campaign('c-9', uids(3)));
  await driver.pipeInput(CAMPAIGNS, 'c-9', cancelRecord('c-9', 'someone-else', 20_000));
  const dlq = driver.readAllOutputs(topicName('dlq'));
  const reasons = dlq.map((r) => r.headers['dlq.error.message'] ?? JSON.stringify(r.headers));
  assert.equal(dlq.length, 5, reasons.join('\n'));
  assert.match(reasons[0]!, /uids: 11 distinct uids \(max 10/);
  assert.match(reasons[1]!, /uids\[1\] is empty/);
  assert.match(reasons[2]!, /uids: give either uids or uid_file/);
  assert.match(reasons[3]!, /campaign_id: must equal the record key/);
  assert.match(reasons[4]!, /sender: campaign c-9 belongs to another sender/);
  await driver.advanceWallClockTime(100);
  assert.deepEqual(
    requests().map((r) => r.key),
    uids(3),
    'c-9 expands: the foreign CANCEL did nothing',
  );
  await driver.close();
});

test('a uid file is read from PUSH_CAMPAIGN_UID_DIR only', async () => {
  const dir = mkdtempSync(`${tmpdir()}/uids-`);
  try {
    writeFileSync(`${dir}/list.txt`, 'u-1\r\nu-2\n\nu-1\nu-3\n');
    const { driver, requests } = harness({ uidDir: dir });
    await driver.pipeInput(CAMPAIGNS, 'c-10', campaign('c-10', [], { uid_file: 'list.txt' }));
    await driver.pipeInput(CAMPAIGNS, 'c-11', campaign('c-11', [], { uid_file: '../etc/passwd' }));
    await driver.advanceWallClockTime(100);
    assert.deepEqual(
      requests().map((r) => r.key),
      ['u-1', 'u-2', 'u-3'],
    );
    const dlq = driver.readAllOutputs(topicName('dlq'));
    assert.equal(dlq.length, 1);
    assert.match(dlq[0]!.headers['dlq.error.message'] ?? '', /uid_file: cannot be read \(outside PUSH_CAMPAIGN_UID_DIR\)/);
    await driver.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
