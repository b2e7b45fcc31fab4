/**
 * Registration of every topic value schema in the stack's schema registry (Confluent-compatible
 * API), under the topic-name strategy, with the registry's BACKWARD rule enforced.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { SchemaType } from '@kafkajs/confluent-schema-registry';
import { registerSchemas, topicValueSchema, valueSubject } from '../../pipeline/schemas.ts';
import { TOPICS, type TopicKey } from '../../pipeline/topics.ts';
import { stackEndpoints, uniqueName } from '../support/stack.ts';
import { SAMPLES } from './samples.ts';
import { schemaRegistryClient } from '../../common/registry-client.ts';

const registry = schemaRegistryClient(stackEndpoints());
const plain = (v: unknown) => JSON.parse(JSON.stringify(v)) as unknown;

describe('schema registry', () => {
  test('every topic value registers under <topic>-value; registering again returns the same ids', async () => {
    const prefix = `${uniqueName('schemas')}.`;
    const ids = await registerSchemas(registry, { prefix });
    assert.deepEqual([...ids.keys()].sort(), (Object.keys(TOPICS) as TopicKey[]).sort());
    for (const [key, id] of ids) {
      assert.equal(await registry.getLatestSchemaId(valueSubject(key, prefix)), id, key);
    }
    const again = await registerSchemas(registry, { prefix });
    assert.deepEqual([...again.entries()], [...ids.entries()]);
  });

  test('records round-trip through the registry wire format', async () => {
    const prefix = `${uniqueName('schemas')}.`;
    const ids = await registerSchemas(registry, { prefix, topics: ['persisted', 'outcomes', 'dispatch'] });
    for (const [key, sample] of [['persisted', SAMPLES['message-persisted']], ['outcomes', SAMPLES['push-outcome']], ['dispatch', SAMPLES['push-dispatch']]] as const) {
      const bytes = await registry.encode(ids.get(key)!, sample);
      assert.equal(bytes[0], 0, 'Confluent magic byte');
      const decoded = (await registry.decode(bytes)) as Record<string, unknown>;
      for (const [field, value] of Object.entries(sample!)) {
        if (field === 'channels') continue;
        assert.deepEqual(plain(decoded[field]), plain(value), `${key}.${field}`);
      }
    }
  });

  test('the registry rejects an incompatible change and accepts a compatible one', async () => {
    const prefix = `${uniqueName('schemas')}.`;
    await registerSchemas(registry, { prefix, topics: ['presence'] });
    const subject = valueSubject('presence', prefix);
    const base = topicValueSchema('presence');
    const breaking = { ...base, fields: [...base.fields, { name: 'gateway_id', type: 'string' }] };
    await assert.rejects(registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(breaking) }, { subject }), (e: { status?: number }) => e.status === 409);
    const compatible = { ...base, fields: [...base.fields, { name: 'gateway_id', type: ['null', 'string'], default: null }] };
    const { id } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(compatible) }, { subject });
    assert.equal(await registry.getLatestSchemaId(subject), id);
  });
});
