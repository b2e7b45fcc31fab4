/**
 * Captures wire fixtures: `npx tsx test/schemas/capture-fixtures.ts [name ...]` encodes each sample
 * with the schema as it is now and writes test/fixtures/wire/<name>.hex (the Avro binary) and
 * <name>.writer.avsc (the writer schema, as the registry would hand it out by id). Run it only when a
 * schema is first added: later schema versions must keep decoding the old captures.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { avroType, loadSchema } from '../../pipeline/schemas.ts';
import { SAMPLES } from './samples.ts';

const dir = fileURLToPath(new URL('../fixtures/wire/', import.meta.url));
const names = process.argv.length > 2 ? process.argv.slice(2) : Object.keys(SAMPLES);
for (const name of names) {
  const sample = SAMPLES[name];
  if (!sample) throw new Error(`no sample for ${name}`);
  const file = `${name}.avsc`;
  writeFileSync(`${dir}${name}.hex`, avroType(file).toBuffer(sample).toString('hex') + '\n');
  writeFileSync(`${dir}${name}.writer.avsc`, JSON.stringify(loadSchema(file), null, 2) + '\n');
  console.log(`captured ${name}`);
}
