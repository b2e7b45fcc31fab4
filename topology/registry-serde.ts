import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { SchemaType } from '@kafkajs/confluent-schema-registry';
import { ContractError, PushError, errorMessage } from '../common/errors.ts';
import type { Serde } from './serdes.ts';

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
export function registryAvroSerde<T>(options: RegistryAvroSerdeOptions): Serde<T> {
  const subjectFor = options.subjectFor ?? ((topic: string) => `${topic}-value`);
  const ids = new Map<string, Promise<number>>();
  const idFor = (topic: string): Promise<number> => {
    const subject = subjectFor(topic);
    let id = ids.get(subject);
    if (!id) {
      id = options.registry
        .register({ type: SchemaType.AVRO, schema: JSON.stringify(options.schema) }, { subject })
        .then((r) => r.id);
      id.catch(() => ids.delete(subject));
      ids.set(subject, id);
    }
    return id;
  };
  const decodeOptions = { [SchemaType.AVRO]: { readerSchema: options.schema as never } };
  return {
    async serialize(topic, value) {
      return options.registry.encode(await idFor(topic), value);
    },
    async deserialize(topic, data) {
      if (data.length < HEADER_BYTES || data[0] !== MAGIC_BYTE) {
        throw new ContractError('DLQ_BAD_FRAMING', `record on ${topic} is not in Confluent wire format`);
      }
      try {
        return (await options.registry.decode(data, decodeOptions)) as T;
      } catch (error) {
        const status = (error as { status?: number }).status;
        if (status === 404 || /not found/i.test(errorMessage(error))) {
          throw new ContractError('UNKNOWN_SCHEMA_ID', `schema id ${data.readInt32BE(1)} on ${topic} is unknown to the registry`, error);
        }
        if (status !== undefined || isNetworkError(error)) {
          throw new PushError('REGISTRY_UNAVAILABLE', `schema registry lookup failed: ${errorMessage(error)}`, { retriable: true, cause: error });
        }
        throw new ContractError('DESERIALIZATION_FAILED', `undecodable Avro on ${topic}: ${errorMessage(error)}`, error);
      }
    },
  };
}

function isNetworkError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && /^E[A-Z]+/.test(code);
}
