import avro from 'avsc';
import { ContractError } from '../common/errors.ts';

/**
 * How a topic's keys or values become bytes and back. Either direction may be asynchronous (a
 * registry-backed serde looks schemas up). A deserializer throws a `ContractError` for bytes it
 * cannot decode; the runtime routes such records to the DLQ with the error's code.
 *
 * Null keys and values (tombstones) never reach a serde: the runtime passes them through as null.
 */
export interface Serde<T> {
  serialize(topic: string, value: T): Buffer | Promise<Buffer>;
  deserialize(topic: string, data: Buffer): T | Promise<T>;
}

/** UTF-8 strings (uids and other plain keys). */
export const stringSerde: Serde<string> = {
  serialize: (_topic, value) => Buffer.from(value, 'utf8'),
  deserialize: (_topic, data) => data.toString('utf8'),
};

/** Bytes as they are. */
export const bufferSerde: Serde<Buffer> = {
  serialize: (_topic, value) => value,
  deserialize: (_topic, data) => data,
};

/** JSON documents; undecodable input is a `DESERIALIZATION_FAILED` contract error. */
export function jsonSerde<T>(): Serde<T> {
  return {
    serialize: (_topic, value) => Buffer.from(JSON.stringify(value)),
    deserialize: (topic, data) => {
      try {
        return JSON.parse(data.toString('utf8')) as T;
      } catch (error) {
        throw new ContractError('DESERIALIZATION_FAILED', `invalid JSON on ${topic}`, error);
      }
    },
  };
}

export type AvroSchemaSource = avro.Type | avro.Schema | object;

function toAvroType(schema: AvroSchemaSource): avro.Type {
  return schema instanceof avro.Type ? schema : avro.Type.forSchema(schema as avro.Schema);
}

/**
 * Raw Avro binary without registry framing, for the TopologyTestDriver and for in-process stores.
 * Values are validated on the way out (an invalid value is a `SERIALIZATION_FAILED` error).
 */
export function avroSerde<T>(schema: AvroSchemaSource): Serde<T> {
  const type = toAvroType(schema);
  return {
    serialize: (topic, value) => {
      try {
        return type.toBuffer(value);
      } catch (error) {
        throw avroSerializationError(type, topic, value, error);
      }
    },
    deserialize: (topic, data) => {
      try {
        return type.fromBuffer(data) as T;
      } catch (error) {
        throw new ContractError('DESERIALIZATION_FAILED', `undecodable Avro on ${topic}`, error);
      }
    },
  };
}

/**
 * A value the Avro type refuses, as a `SERIALIZATION_FAILED` contract error naming the fields that
 * are wrong and their types (e.g. `timestamp (long)` for 1e20 or 0.5), never their values: the
 * message goes into DLQ headers and logs.
 */
export function avroSerializationError(type: avro.Type, topic: string, value: unknown, cause: unknown): ContractError {
  const fields: string[] = [];
  try {
    type.isValid(value, { errorHook: (path, _v, t) => void (fields.length < 10 && fields.push(`${path.join('.') || '(value)'} (${t.typeName})`)) });
  } catch {
    // isValid can throw on values it cannot walk (cycles); the fields stay unnamed.
  }
  const where = fields.length > 0 ? `: invalid ${fields.join(', ')}` : '';
  return new ContractError('SERIALIZATION_FAILED', `value for ${topic} does not match ${type.name ?? type.typeName}${where}`, cause);
}
