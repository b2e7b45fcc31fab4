import { inspect } from 'node:util';
import { errorCode, errorMessage } from '../common/errors.ts';
import { recordBytes } from './record-size.ts';

/** Header names on DLQ records. Values are UTF-8 strings. */
export const DLQ_HEADERS = {
  sourceTopic: 'dlq.source.topic',
  sourcePartition: 'dlq.source.partition',
  sourceOffset: 'dlq.source.offset',
  errorCode: 'dlq.error.code',
  errorMessage: 'dlq.error.message',
  /** `deserialization`, `processing` or `production` (see DlqPhase). */
  phase: 'dlq.error.phase',
  applicationId: 'dlq.application.id',
  /** The node that failed: the processor (processing errors) or the sink node (production errors). */
  node: 'dlq.node',
  /** Production errors: the topic the sink node writes. */
  sinkTopic: 'dlq.sink.topic',
  /**
   * Production errors: what was running when the output failed: `process` (an input record, which
   * is then the DLQ record), `punctuator:<node>`, `flush:<node>` or `init:<node>` (no input record:
   * the DLQ record is the failed output itself).
   */
  origin: 'dlq.origin',
  /** The task (`<sub-topology>_<partition>`) that wrote the record. */
  taskId: 'dlq.task.id',
  /** `json` when the value is a JSON rendering of an output that could not be serialized; absent for original bytes. */
  valueFormat: 'dlq.value.format',
  /** `json` when the key is a JSON rendering (its serialization failed). */
  keyFormat: 'dlq.key.format',
  /** Set when the value was left out because the DLQ record would be over the DLQ topic's limit: the value's size in bytes. */
  valueOmittedBytes: 'dlq.value.omitted.bytes',
  failedAt: 'dlq.failed.at',
} as const;

/**
 * Where a record failed, after Kafka Streams' three exception handlers: it could not be decoded
 * (`deserialization`), a processor threw on it (`processing`), or one of its outputs could not be
 * written (`production`: serialization failed at a sink node, or the output is over the record limit).
 */
export type DlqPhase = 'deserialization' | 'processing' | 'production';

/** Where a failed record came from. */
export interface DlqSource {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly timestamp: number;
  readonly headers: Readonly<Record<string, string>>;
}

export interface DeadLetter {
  readonly topic: string;
  readonly key: Buffer | null;
  /** The original bytes, unchanged, so the record can be replayed once the cause is fixed. */
  readonly value: Buffer | null;
  readonly timestamp: number;
  readonly headers: Record<string, string>;
}

/** Longest error message kept in a header. */
const MAX_MESSAGE_CHARS = 1000;

/** Optional headers naming where a production error happened. */
export interface DlqOrigin {
  readonly node?: string | undefined;
  readonly sinkTopic?: string | undefined;
  readonly origin?: string | undefined;
  readonly taskId?: string | undefined;
}

function reasonHeaders(error: unknown, phase: DlqPhase, applicationId: string, nowMs: number, where: DlqOrigin): Record<string, string> {
  const headers: Record<string, string> = {
    [DLQ_HEADERS.errorCode]: errorCode(error),
    [DLQ_HEADERS.errorMessage]: errorMessage(error).slice(0, MAX_MESSAGE_CHARS),
    [DLQ_HEADERS.phase]: phase,
    [DLQ_HEADERS.applicationId]: applicationId,
    [DLQ_HEADERS.failedAt]: new Date(nowMs).toISOString(),
  };
  if (where.node) headers[DLQ_HEADERS.node] = where.node;
  if (where.sinkTopic) headers[DLQ_HEADERS.sinkTopic] = where.sinkTopic;
  if (where.origin) headers[DLQ_HEADERS.origin] = where.origin;
  if (where.taskId) headers[DLQ_HEADERS.taskId] = where.taskId;
  return headers;
}

/**
 * A DLQ record: the original key and value bytes, the original headers, plus headers naming the
 * source topic, partition, offset, error code and message. Error messages never contain record
 * contents (serdes and processors must not put tokens in messages).
 */
export function deadLetter(
  dlqTopic: string,
  source: DlqSource,
  error: unknown,
  phase: DlqPhase,
  applicationId: string,
  nowMs: number,
  node?: string | DlqOrigin,
): DeadLetter {
  const where: DlqOrigin = typeof node === 'string' ? { node } : (node ?? {});
  const headers: Record<string, string> = {
    ...source.headers,
    [DLQ_HEADERS.sourceTopic]: source.topic,
    [DLQ_HEADERS.sourcePartition]: String(source.partition),
    [DLQ_HEADERS.sourceOffset]: source.offset,
    ...reasonHeaders(error, phase, applicationId, nowMs, where),
  };
  return { topic: dlqTopic, key: source.key, value: source.value, timestamp: source.timestamp, headers };
}

/** An output a sink node could not write: its key and value as serialized, or as given when serializing failed. */
export interface FailedOutput {
  readonly key: Buffer | unknown;
  readonly value: Buffer | unknown;
  readonly timestamp: number;
  readonly headers: Readonly<Record<string, string>>;
  /** The task's partition (the output has no source offset: a punctuator or flush wrote it). */
  readonly partition: number;
}

/**
 * A DLQ record for an output written without an input record (a punctuator, a flush): nothing can
 * be replayed, so the output itself is kept. Serialized bytes stay as they are; a key or value
 * that could not be serialized is rendered as JSON (`dlq.key.format` / `dlq.value.format`: json).
 */
export function outputDeadLetter(dlqTopic: string, output: FailedOutput, error: unknown, applicationId: string, nowMs: number, where: DlqOrigin): DeadLetter {
  const headers: Record<string, string> = {
    ...output.headers,
    [DLQ_HEADERS.sourcePartition]: String(output.partition),
    ...reasonHeaders(error, 'production', applicationId, nowMs, where),
  };
  const bytes = (x: unknown, header: string): Buffer | null => {
    if (x === null || x === undefined) return null;
    if (Buffer.isBuffer(x)) return x;
    headers[header] = 'json';
    return renderForDeadLetter(x);
  };
  const key = bytes(output.key, DLQ_HEADERS.keyFormat);
  const value = bytes(output.value, DLQ_HEADERS.valueFormat);
  return { topic: dlqTopic, key, value, timestamp: output.timestamp, headers };
}

/**
 * A faithful JSON rendering of a value a serde refused: what JSON cannot say is tagged instead of
 * lost or changed (undefined fields, bigints, NaN and infinities, bytes), so the DLQ shows exactly
 * which field was wrong. Numbers JSON can hold (1e20, 0.5) are written as they are.
 */
export function renderForDeadLetter(value: unknown): Buffer {
  try {
    return Buffer.from(JSON.stringify(value, renderReplacer) ?? 'null');
  } catch {
    // Cycles and the like: node's own description.
    return Buffer.from(JSON.stringify({ $inspect: inspect(value, { depth: 6, breakLength: Infinity }) }));
  }
}

function renderReplacer(this: unknown, key: string, current: unknown): unknown {
  // `this[key]` is the value before toJSON (a Buffer would be {type, data} already).
  const original = (this as Record<string, unknown>)[key];
  if (Buffer.isBuffer(original) || original instanceof Uint8Array) return { $bytes: Buffer.from(original as Uint8Array).toString('base64') };
  if (original === undefined && key !== '') return { $undefined: true };
  if (typeof original === 'bigint') return { $bigint: original.toString() };
  if (typeof original === 'number' && !Number.isFinite(original)) return { $number: String(original) };
  if (typeof original === 'function' || typeof original === 'symbol') return { $unsupported: String(original) };
  return current;
}

/**
 * Keeps a DLQ record writable: past the DLQ topic's limit the value is left out (its size is kept
 * in `dlq.value.omitted.bytes`), so a huge poison record never blocks the task that rejects it.
 */
export function fitDeadLetter(letter: DeadLetter, limitBytes: number): DeadLetter {
  if (recordBytes(letter.key, letter.value, letter.headers) <= limitBytes) return letter;
  const headers: Record<string, string> = { ...letter.headers, [DLQ_HEADERS.valueOmittedBytes]: String(letter.value?.length ?? 0) };
  delete headers[DLQ_HEADERS.valueFormat];
  const trimmed = { ...letter, value: null, headers };
  if (recordBytes(trimmed.key, null, headers) <= limitBytes) return trimmed;
  // Headers or key alone over the limit (a huge original header): keep the reason only.
  const reasonOnly: Record<string, string> = {};
  for (const [name, v] of Object.entries(headers)) if (name.startsWith('dlq.')) reasonOnly[name] = v;
  return { ...trimmed, key: null, headers: reasonOnly };
}
