import avro from 'avsc';
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { SchemaType, type COMPATIBILITY } from '@kafkajs/confluent-schema-registry';
import { ContractError, PushError, errorMessage } from '../common/errors.ts';
import { avroSerializationError, type Serde } from './serdes.ts';

/** Confluent wire format: magic byte 0, 4-byte big-endian schema id, Avro binary. */
const MAGIC_BYTE = 0;
const HEADER_BYTES = 5;

export interface RegistryAvroSerdeOptions {
  registry: SchemaRegistry;
  /** The Avro schema (parsed .avsc JSON) this serde writes, and reads as its reader schema. */
  schema: object;
  /** Subject for a topic; default `<topic>-value` (topic-name strategy). */
  subjectFor?: (topic: string) => string;
}

/**
 * Avro through a Confluent-compatible schema registry (Confluent wire format). The writer schema is
 * registered once per subject and cached; decoding resolves the writer schema by id (cached by the
 * registry client) and reads it with this serde's schema.
 *
 * Errors: bytes without the wire-format header → `DLQ_BAD_FRAMING`; an id the registry does not
 * know → `UNKNOWN_SCHEMA_ID`; undecodable body → `DESERIALIZATION_FAILED` (all ContractErrors, so
 * the runtime sends the record to the DLQ). An unreachable registry is retriable and fails the task.
 */
/**
 * Registers a schema under a subject. Two processes registering a new subject at once race on
 * the subject's compatibility setting (Apicurio answers "A rule named 'COMPATIBILITY' already
 * exists" to the loser); the schema is registered either way, so the loser simply asks again.
 */
export async function registerSchema(registry: SchemaRegistry, schema: object, subject: string, compatibility?: COMPATIBILITY): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    try {
      const options = compatibility === undefined ? { subject } : { subject, compatibility };
      return (await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(schema) }, options)).id;
    } catch (error) {
      if (attempt >= 5 || !/already exists/i.test(errorMessage(error))) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
    }
  }
}

export function registryAvroSerde<T>(options: RegistryAvroSerdeOptions): Serde<T> {
  const subjectFor = options.subjectFor ?? ((topic: string) => `${topic}-value`);
  // Parsed once: the registry client would re-parse the reader schema on every decode.
  const reader = avro.Type.forSchema(options.schema as avro.Schema);
  // Lookups are cached twice: the promise (so concurrent first uses share one request) and, once
  // settled, the value itself, so every later record is encoded and decoded without a promise.
  const ids = new Map<string, Promise<number>>();
  const knownIds = new Map<string, number>();
  const idFor = (topic: string): Promise<number> => {
    const subject = subjectFor(topic);
    let id = ids.get(subject);
    if (!id) {
      id = registerSchema(options.registry, options.schema, subject);
      id.then(
        (value) => knownIds.set(subject, value),
        () => ids.delete(subject),
      );
      ids.set(subject, id);
    }
    return id;
  };
  /** Per writer schema id: how to read its bytes with this serde's schema (null: read directly). */
  const resolvers = new Map<number, Promise<avro.Resolver | null>>();
  const knownResolvers = new Map<number, avro.Resolver | null>();
  const resolverFor = (id: number): Promise<avro.Resolver | null> => {
    let resolver = resolvers.get(id);
    if (!resolver) {
      resolver = options.registry.getSchema(id).then((writer) => {
        const writerType = writer as unknown as avro.Type;
        return writerType.equals(reader) ? null : reader.createResolver(writerType);
      });
      resolver.then(
        (value) => knownResolvers.set(id, value),
        () => resolvers.delete(id),
      );
      resolvers.set(id, resolver);
    }
    return resolver;
  };
  const encode = (topic: string, id: number, value: T): Buffer => {
    let body: Buffer;
    try {
      body = reader.toBuffer(value);
    } catch (error) {
      throw avroSerializationError(reader, topic, value, error);
    }
    const out = Buffer.allocUnsafe(HEADER_BYTES + body.length);
    out[0] = MAGIC_BYTE;
    out.writeInt32BE(id, 1);
    body.copy(out, HEADER_BYTES);
    return out;
  };
  const decode = (topic: string, data: Buffer, resolver: avro.Resolver | null): T => {
    try {
      const payload = data.subarray(HEADER_BYTES);
      return (resolver ? reader.fromBuffer(payload, resolver) : reader.fromBuffer(payload)) as T;
    } catch (error) {
      throw new ContractError('DESERIALIZATION_FAILED', `undecodable Avro on ${topic}: ${errorMessage(error)}`, error);
    }
  };
  const lookUp = async (topic: string, id: number): Promise<avro.Resolver | null> => {
    try {
      return await resolverFor(id);
    } catch (error) {
      const status = (error as { status?: number }).status;
      if (status === 404 || /not found/i.test(errorMessage(error))) {
        throw new ContractError('UNKNOWN_SCHEMA_ID', `schema id ${id} on ${topic} is unknown to the registry`, error);
      }
      if (status !== undefined || isNetworkError(error)) {
        throw new PushError('REGISTRY_UNAVAILABLE', `schema registry lookup failed: ${errorMessage(error)}`, { retriable: true, cause: error });
      }
      throw new ContractError('DESERIALIZATION_FAILED', `writer schema ${id} on ${topic} cannot be read: ${errorMessage(error)}`, error);
    }
  };
  return {
    serialize(topic, value) {
      const id = knownIds.get(subjectFor(topic));
      return id !== undefined ? encode(topic, id, value) : idFor(topic).then((fresh) => encode(topic, fresh, value));
    },
    deserialize(topic, data) {
      if (data.length < HEADER_BYTES || data[0] !== MAGIC_BYTE) {
        throw new ContractError('DLQ_BAD_FRAMING', `record on ${topic} is not in Confluent wire format`);
      }
      const id = data.readInt32BE(1);
      const resolver = knownResolvers.get(id);
      if (resolver !== undefined || knownResolvers.has(id)) return decode(topic, data, resolver ?? null);
      return lookUp(topic, id).then((fresh) => decode(topic, data, fresh));
    },
  };
}

function isNetworkError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && /^E[A-Z]+/.test(code);
}
