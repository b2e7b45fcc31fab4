import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { SchemaType } from '@kafkajs/confluent-schema-registry';
import { stackEndpoints, uniqueName } from '../support/stack.ts';
import { StreamsApp } from '../../topology/runtime.ts';
import { registryAvroSerde } from '../../topology/registry-serde.ts';
import { DLQ_HEADERS } from '../../topology/dlq.ts';
import { createLogger } from '../../common/log.ts';
import { countingTopology, wordSchema, type WordEvent } from './fixtures.ts';
import { brokers, createTopics, decodeCounts, kafka, readTopic } from './kafka-helpers.ts';
import { schemaRegistryClient } from '../../common/registry-client.ts';

const admin = kafka.admin();
const registry = schemaRegistryClient(stackEndpoints());
let app: StreamsApp | undefined;

before(() => admin.connect());
after(async () => {
  await app?.close();
  await admin.disconnect();
});

test('garbage bytes and unknown schema ids go to the DLQ with reasons while valid records keep flowing', { timeout: 120_000 }, async () => {
  const input = uniqueName('poison-in');
  const output = uniqueName('poison-out');
  const dlq = uniqueName('poison-dlq');
  await createTopics(admin, [
    { topic: input, partitions: 2 },
    { topic: output, partitions: 2 },
  ]);
  const { id } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(wordSchema) }, { subject: `${input}-value` });

  const unknownId = Buffer.alloc(5 + 8);
  unknownId.writeInt32BE(2_000_000_000 - Math.floor(Math.random() * 1000), 1);
  const poison: Array<{ kind: string; value: Buffer }> = [
    { kind: 'garbage', value: randomBytes(40) },
    { kind: 'short', value: Buffer.from([0, 1]) },
    { kind: 'unknown-id', value: unknownId },
    { kind: 'garbage', value: Buffer.from('{"word":"json is not avro"}') },
  ];
  const expectedCodes = new Map([
    ['garbage', 'DLQ_BAD_FRAMING'],
    ['short', 'DLQ_BAD_FRAMING'],
    ['unknown-id', 'UNKNOWN_SCHEMA_ID'],
  ]);
  poison[0]!.value[0] = 0x7b; // never the magic byte
  const messages: Array<{ key: string; value: Buffer; headers: Record<string, string> }> = [];
  let valid = 0;
  for (let i = 0; i < 400; i++) {
    if (i % 25 === 3) {
      const p = poison[((i / 25) % poison.length) | 0]!;
      messages.push({ key: `w${i % 7}`, value: p.value, headers: { kind: p.kind } });
    } else {
      messages.push({ key: `w${i % 7}`, value: await registry.encode(id, { word: `w${i % 7}`, seq: i } satisfies WordEvent), headers: { kind: 'valid' } });
      valid++;
    }
  }
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic: input, messages });
  await producer.disconnect();

  app = new StreamsApp({
    applicationId: uniqueName('poison-app'),
    topology: countingTopology(input, output, registryAvroSerde<WordEvent>({ registry, schema: wordSchema })),
    brokers,
    processingGuarantee: 'exactly_once',
    dlqTopic: dlq,
    logger: createLogger({}, 'warn'),
  });
  await app.start();
  const poisoned = messages.length - valid;
  const [out, letters] = await Promise.all([readTopic(output, (r) => r.length >= valid, 60_000), readTopic(dlq, (r) => r.length >= poisoned, 60_000)]);

  assert.equal(decodeCounts(out).length, valid);
  assert.deepEqual(new Set(decodeCounts(out).map((o) => o.seq)).size, valid);
  assert.equal(letters.length, poisoned);
  for (const letter of letters) {
    const h = (name: string) => letter.headers[name]?.toString();
    const kind = h('kind')!;
    assert.equal(h(DLQ_HEADERS.sourceTopic), input);
    assert.match(h(DLQ_HEADERS.sourcePartition)!, /^[01]$/);
    assert.match(h(DLQ_HEADERS.sourceOffset)!, /^\d+$/);
    assert.equal(h(DLQ_HEADERS.phase), 'deserialization');
    assert.ok(h(DLQ_HEADERS.errorMessage)!.length > 0);
    if (kind === 'unknown-id' || kind === 'short') assert.equal(h(DLQ_HEADERS.errorCode), expectedCodes.get(kind), `code of a ${kind} record`);
    else assert.equal(h(DLQ_HEADERS.errorCode), 'DLQ_BAD_FRAMING', `code of a ${kind} record`);
    assert.ok(
      poison.some((p) => p.value.equals(letter.value!)),
      'the DLQ keeps the original bytes',
    );
  }
  assert.deepEqual(new Set(letters.map((l) => l.headers.kind?.toString())), new Set(['garbage', 'short', 'unknown-id']));
});
