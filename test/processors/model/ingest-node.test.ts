/**
 * The ingest node (processors/model/inputs.ts `ingest`): it knows the kind of record its topic
 * carries, so a record of another kind is refused rather than taken for what its fields look like,
 * a tombstone becomes a deletion only on a table's topic, and what passes reaches the stages tagged.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TopologyBuilder } from '../../../topology/builder.ts';
import { jsonSerde, stringSerde } from '../../../topology/serdes.ts';
import { TopologyTestDriver } from '../../../topology/test-driver.ts';
import { DLQ_HEADERS } from '../../../topology/dlq.ts';
import { ingest, tagged, type IngestKind, type Ingested } from '../../../processors/model/inputs.ts';
import type { MessagePersisted } from '../../../processors/model/records.ts';

const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);

function driverFor(kind: IngestKind): TopologyTestDriver {
  const topology = new TopologyBuilder()
    .addSource('in', { topics: ['in'], keySerde: stringSerde, valueSerde: jsonSerde<unknown>() })
    .addProcessor('ingest', ingest(kind), 'in')
    .addSink('out', { topic: 'out', keySerde: stringSerde, valueSerde: jsonSerde<Ingested>() }, 'ingest')
    .build();
  return new TopologyTestDriver(topology, { startWallClockMs: NOW });
}

const deadLetters = (d: TopologyTestDriver) =>
  d.readAllOutputs('dlq').map((r) => `${r.headers[DLQ_HEADERS.errorCode]}: ${r.headers[DLQ_HEADERS.errorMessage]}`);

const message: MessagePersisted = {
  msg_id: 'm1',
  conv_id: 'c1',
  conv_type: 'SINGLE',
  seq: 1,
  sender_uid: 'u2',
  uid: 'u1',
  unread_cnt: 1,
  title: 'Alice',
  summary: 'hi',
  sensitive: false,
  mention: 'NONE',
  persisted_at: NOW,
  app_id: 'im.demo',
};

/** A token report's fields (push.tokens), not a message's. */
const tokenShaped = { uid: 'u1', device_id: 'd1', vendor: 'fcm', app_id: 'im.demo', token: 'fcm-d1', state: 'VALID' };

test('a checked record reaches the stages tagged with the kind of its topic', async () => {
  const d = driverFor('message');
  await d.pipeInput('in', 'u1', message);
  assert.deepEqual(
    d.readAllOutputs<string, Ingested>('out').map((r) => r.value),
    [{ kind: 'message', value: message }],
  );
  assert.deepEqual(deadLetters(d), []);
});

test('a token report on the messages topic is refused, not taken for a token', async () => {
  const d = driverFor('message');
  await d.pipeInput('in', 'u1', tokenShaped);
  assert.deepEqual(d.readAllOutputs('out'), []);
  assert.deepEqual(deadLetters(d), ["UNEXPECTED_RECORD: record is not a message record (its topic's schema)"]);
});

test('a rule broken is named; the record goes no further', async () => {
  const d = driverFor('message');
  await d.pipeInput('in', 'u2', message);
  assert.deepEqual(d.readAllOutputs('out'), []);
  assert.match(deadLetters(d)[0]!, /^CONTRACT_VIOLATION: message record breaks ingest rule key_is_uid:/);
});

test("a tombstone deletes on a table's topic and is refused on any other", async () => {
  const tokens = driverFor('token');
  await tokens.pipeInput('in', 'u1', null);
  assert.deepEqual(
    tokens.readAllOutputs<string, Ingested>('out').map((r) => r.value),
    [{ kind: 'tombstone', table: 'token', uid: 'u1' }],
  );
  const presence = driverFor('presence');
  await presence.pipeInput('in', 'u1', null);
  assert.deepEqual(presence.readAllOutputs('out'), []);
  assert.match(deadLetters(presence)[0]!, /^CONTRACT_VIOLATION: breaks ingest rule tombstone:/);
});

test('a tagged hand-over passes its value on, tagged, and refuses a missing one', async () => {
  const topology = new TopologyBuilder()
    .addSource('in', { topics: ['in'], keySerde: stringSerde, valueSerde: jsonSerde<unknown>() })
    .addProcessor('tag', tagged('request'), 'in')
    .addSink('out', { topic: 'out', keySerde: stringSerde, valueSerde: jsonSerde<unknown>() }, 'tag')
    .build();
  const d = new TopologyTestDriver(topology, { startWallClockMs: NOW });
  await d.pipeInput('in', 'u1', { uid: 'u1' });
  await d.pipeInput('in', 'u1', null);
  assert.deepEqual(
    d.readAllOutputs('out').map((r) => r.value),
    [{ kind: 'request', value: { uid: 'u1' } }],
  );
  assert.match(deadLetters(d)[0]!, /^CONTRACT_VIOLATION: breaks ingest rule tombstone:/);
});
