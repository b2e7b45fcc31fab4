/**
 * Schema evolution: every schema in schemas/ must read what its released version in
 * schemas/baseline/ wrote (BACKWARD, the rule the registry applies when the new version is
 * registered), and the captured wire fixtures must decode with the current reader schemas.
 *
 * schemas/baseline/ keeps the released schemas, so the check means the same in a fresh clone, in CI
 * and after any commit. It moves forward only on a release: the release commit copies the schemas
 * it ships over the baseline (`cp schemas/*.avsc schemas/baseline/`), and later changes are then
 * checked against what was released. A schema without a baseline is new since the last release.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import avro from 'avsc';
import { avroType, backwardIncompatibility, loadSchema, SCHEMA_DIR, schemaFiles, type AvroRecordSchema } from '../../pipeline/schemas.ts';
import { TOPICS } from '../../pipeline/topics.ts';
import { SAMPLES } from './samples.ts';

const wireDir = fileURLToPath(new URL('../fixtures/wire/', import.meta.url));
const BASELINE = 'baseline';

/** avsc decodes records as class instances; compare them as plain JSON values. */
const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value)) as unknown;

/** The released version of a schema (schemas/baseline/<file>), or undefined when it is new since the last release. */
function released(file: string): AvroRecordSchema | undefined {
  return existsSync(join(SCHEMA_DIR, BASELINE, file)) ? loadSchema(`${BASELINE}/${file}`) : undefined;
}

/** Why `schema` cannot read what the released version of `file` wrote; undefined when it can (or nothing was released). */
function releasedIncompatibility(file: string, schema: AvroRecordSchema): string | undefined {
  const baseline = released(file);
  return baseline && backwardIncompatibility(schema, baseline);
}

describe('schemas/', () => {
  test('every topic has its value schema, and every schema belongs to a topic', () => {
    const files = schemaFiles();
    const used = Object.values(TOPICS).map((t) => t.valueSchema).sort();
    assert.deepEqual(files, [...new Set(used)].sort());
  });

  test('the input fields of docs/design.md, "Topology" exist', () => {
    const fields = (file: string) => loadSchema(file).fields.map((f) => (f as { name: string }).name);
    for (const f of ['msg_id', 'conv_id', 'conv_type', 'seq', 'sender_uid', 'uid', 'unread_cnt', 'title', 'summary', 'sensitive', 'mention', 'persisted_at', 'app_id']) {
      assert.ok(fields('message-persisted.avsc').includes(f), `message-persisted.${f}`);
    }
    for (const f of ['uid', 'device_id', 'kind', 'conv_id', 'seq', 'at']) assert.ok(fields('presence-event.avsc').includes(f), `presence-event.${f}`);
    for (const f of ['uid', 'device_id', 'platform', 'vendor', 'app_id', 'token', 'reported_at', 'state', 'source', 'reason']) {
      assert.ok(fields('token-report.avsc').includes(f), `token-report.${f}`);
    }
    for (const f of ['uid', 'time_zone', 'quiet_hours', 'muted_conversations', 'private_mode']) assert.ok(fields('user-settings.avsc').includes(f), `user-settings.${f}`);
    const kinds = (avroType('presence-event.avsc') as unknown as { field(n: string): { type: { symbols: string[] } } }).field('kind').type.symbols;
    assert.deepEqual(kinds, ['HEARTBEAT', 'CONNECT', 'DISCONNECT', 'FOREGROUND', 'BACKGROUND', 'EXIT', 'ACK', 'READ']);
  });

  test('every released schema (schemas/baseline/) is still in schemas/', () => {
    const baseline = schemaFiles(join(SCHEMA_DIR, BASELINE));
    assert.ok(baseline.length > 0, 'schemas/baseline/ holds the released schemas');
    const removed = baseline.filter((f) => !schemaFiles().includes(f));
    assert.deepEqual(removed, [], 'a released schema was removed from schemas/');
  });

  for (const file of schemaFiles()) {
    test(`${file} reads data written by its released version in schemas/baseline/ (BACKWARD)`, () => {
      const current = loadSchema(file);
      // A schema new since the release has nothing to be compatible with; the fixture test below still checks its encoding.
      assert.equal(releasedIncompatibility(file, current), undefined, `schemas/${file} is not BACKWARD compatible with schemas/baseline/${file}`);
      assert.equal(backwardIncompatibility(current, current), undefined);
    });
  }

  test('the check against the baseline rejects a field added without a default and a removed enum symbol', () => {
    const file = 'presence-event.avsc';
    const base = released(file);
    assert.ok(base, `schemas/baseline/${file} exists`);
    const addedRequired = { ...base, fields: [...base.fields, { name: 'gateway', type: 'string' }] };
    assert.match(releasedIncompatibility(file, addedRequired) ?? '', /gateway/);
    const fewerKinds = JSON.parse(JSON.stringify(base)) as { fields: Array<{ name: string; type: { symbols?: string[] } }> };
    fewerKinds.fields.find((f) => f.name === 'kind')!.type.symbols = ['HEARTBEAT', 'ACK'];
    assert.notEqual(releasedIncompatibility(file, fewerKinds as unknown as AvroRecordSchema), undefined);
    // Adding a field with a default, or an enum symbol, is fine.
    const addedOptional = { ...base, fields: [...base.fields, { name: 'gateway', type: ['null', 'string'], default: null }] };
    assert.equal(releasedIncompatibility(file, addedOptional), undefined);
    const moreKinds = JSON.parse(JSON.stringify(base)) as { fields: Array<{ name: string; type: { symbols?: string[] } }> };
    moreKinds.fields.find((f) => f.name === 'kind')!.type.symbols!.push('SLEEP');
    assert.equal(releasedIncompatibility(file, moreKinds as unknown as AvroRecordSchema), undefined);
  });
});

describe('wire fixtures (test/fixtures/wire)', () => {
  const fixtures = readdirSync(wireDir).filter((f) => f.endsWith('.hex')).map((f) => f.slice(0, -4)).sort();

  test('there is a captured fixture for every schema', () => {
    assert.deepEqual(fixtures, schemaFiles().map((f) => f.slice(0, -5)));
  });

  for (const name of fixtures) {
    test(`${name}: the captured encoding decodes with the current reader schema`, () => {
      const bytes = Buffer.from(readFileSync(`${wireDir}${name}.hex`, 'utf8').trim(), 'hex');
      const writer = avro.Type.forSchema(JSON.parse(readFileSync(`${wireDir}${name}.writer.avsc`, 'utf8')) as avro.Schema);
      const reader = avroType(`${name}.avsc`);
      const decoded = reader.fromBuffer(bytes, reader.createResolver(writer)) as Record<string, unknown>;
      const sample = SAMPLES[name]!;
      for (const [field, value] of Object.entries(sample)) {
        if (name === 'push-dispatch' && field === 'channels') continue; // compared below, with the defaulted field
        assert.deepEqual(plain(decoded[field]), plain(value), `${name}.${field}`);
      }
      assert.ok(reader.isValid(decoded), 'the decoded value is a valid current record');
    });
  }

  test('push-dispatch written before channel classification existed reads with empty classification', () => {
    const bytes = Buffer.from(readFileSync(`${wireDir}push-dispatch.hex`, 'utf8').trim(), 'hex');
    const writer = avro.Type.forSchema(JSON.parse(readFileSync(`${wireDir}push-dispatch.writer.avsc`, 'utf8')) as avro.Schema);
    const reader = avroType('push-dispatch.avsc');
    const decoded = reader.fromBuffer(bytes, reader.createResolver(writer)) as { channels: unknown[] };
    assert.deepEqual(plain(decoded.channels), [
      { vendor: 'hms', token: 'tok-a', classification: {} },
      { vendor: 'fcm', token: 'tok-b', classification: {} },
    ]);
  });
});
