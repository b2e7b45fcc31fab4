/**
 * The pipeline's Avro value schemas: loaded from `schemas/*.avsc` and registered in a
 * Confluent-compatible schema registry under the topic-name subject strategy (`<topic>-value`).
 * Every schema is self-contained (no references), so any Confluent-compatible registry accepts it.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import avro from 'avsc';
import { COMPATIBILITY, type SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { ContractError } from '../common/errors.ts';
import { registerSchema } from '../topology/registry-serde.ts';
import { TOPICS, topicName, type TopicKey } from './topics.ts';

/** Absolute path of the `schemas/` folder. */
export const SCHEMA_DIR = fileURLToPath(new URL('../schemas/', import.meta.url));

/** An Avro record schema as JSON (what an .avsc file holds). */
export interface AvroRecordSchema {
  readonly type: 'record';
  readonly name: string;
  readonly namespace?: string;
  readonly doc?: string;
  readonly fields: readonly unknown[];
}

const parsedFiles = new Map<string, AvroRecordSchema>();
const avroTypes = new Map<string, avro.Type>();

/** The .avsc files in `schemas/`, sorted. */
export function schemaFiles(dir: string = SCHEMA_DIR): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.avsc'))
    .sort();
}

/** Reads and parses one .avsc file (cached). Throws a ContractError naming the file when it is not a valid Avro record. */
export function loadSchema(file: string): AvroRecordSchema {
  const cached = parsedFiles.get(file);
  if (cached) return cached;
  let parsed: AvroRecordSchema;
  try {
    parsed = JSON.parse(readFileSync(SCHEMA_DIR + file, 'utf8')) as AvroRecordSchema;
    avro.Type.forSchema(parsed as avro.Schema);
  } catch (error) {
    throw new ContractError('SCHEMA_INVALID', `schemas/${file}: ${(error as Error).message}`, error);
  }
  if (parsed.type !== 'record') throw new ContractError('SCHEMA_INVALID', `schemas/${file}: a topic value must be an Avro record`);
  parsedFiles.set(file, parsed);
  return parsed;
}

/** The avsc Type of one .avsc file (cached). Unions decode to plain values (`null` or the value). */
export function avroType(file: string): avro.Type {
  let type = avroTypes.get(file);
  if (!type) {
    type = avro.Type.forSchema(loadSchema(file) as avro.Schema);
    avroTypes.set(file, type);
  }
  return type;
}

/** The value schema of a topic. */
export function topicValueSchema(key: TopicKey): AvroRecordSchema {
  return loadSchema(TOPICS[key].valueSchema);
}

/** Subject of a topic's value under the topic-name strategy: `<prefix><topic>-value`. */
export function valueSubject(key: TopicKey, prefix = ''): string {
  return `${topicName(key, prefix)}-value`;
}

export interface RegisterOptions {
  /** Topic name prefix (PUSH_TOPIC_PREFIX); default none. */
  readonly prefix?: string;
  /** Which topics to register; default all of TOPICS. */
  readonly topics?: readonly TopicKey[];
}

/**
 * Registers the value schema of every topic (idempotent: the registry returns the existing id for an
 * identical schema). The registry enforces BACKWARD compatibility against the subject's latest
 * version; an incompatible change fails here, before any worker produces. Returns the schema ids.
 */
export async function registerSchemas(registry: SchemaRegistry, options: RegisterOptions = {}): Promise<Map<TopicKey, number>> {
  const keys = options.topics ?? (Object.keys(TOPICS) as TopicKey[]);
  const ids = new Map<TopicKey, number>();
  for (const key of keys) {
    const subject = valueSubject(key, options.prefix);
    // `compatibility` is only compared with a subject-level setting when the registry has one; the
    // global BACKWARD rule of the registry applies otherwise.
    ids.set(key, await registerSchema(registry, topicValueSchema(key), subject, COMPATIBILITY.BACKWARD));
  }
  return ids;
}

/**
 * Whether data written with `writer` can be read with `reader` (Avro schema resolution, the
 * registry's BACKWARD rule for one step). Returns the resolution error's message when it cannot.
 */
export function backwardIncompatibility(reader: AvroRecordSchema, writer: AvroRecordSchema): string | undefined {
  try {
    avro.Type.forSchema(reader as avro.Schema).createResolver(avro.Type.forSchema(writer as avro.Schema));
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}
