import { errorCode, errorMessage } from '../common/errors.ts';

/** Header names on DLQ records. Values are UTF-8 strings. */
export const DLQ_HEADERS = {
  sourceTopic: 'dlq.source.topic',
  sourcePartition: 'dlq.source.partition',
  sourceOffset: 'dlq.source.offset',
  errorCode: 'dlq.error.code',
  errorMessage: 'dlq.error.message',
  /** `deserialization` or `processing`. */
  phase: 'dlq.error.phase',
  applicationId: 'dlq.application.id',
  /** The node that failed (processing errors only). */
  node: 'dlq.node',
  failedAt: 'dlq.failed.at',
} as const;

export type DlqPhase = 'deserialization' | 'processing';

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

/**
 * A DLQ record: the original key and value bytes, the original headers, plus headers naming the
 * source topic, partition, offset, error code and message. Error messages never contain record
 * contents (serdes and processors must not put tokens in messages).
 */
export function deadLetter(dlqTopic: string, source: DlqSource, error: unknown, phase: DlqPhase, applicationId: string, nowMs: number, node?: string): DeadLetter {
  const headers: Record<string, string> = {
    ...source.headers,
    [DLQ_HEADERS.sourceTopic]: source.topic,
    [DLQ_HEADERS.sourcePartition]: String(source.partition),
    [DLQ_HEADERS.sourceOffset]: source.offset,
    [DLQ_HEADERS.errorCode]: errorCode(error),
    [DLQ_HEADERS.errorMessage]: errorMessage(error).slice(0, MAX_MESSAGE_CHARS),
    [DLQ_HEADERS.phase]: phase,
    [DLQ_HEADERS.applicationId]: applicationId,
    [DLQ_HEADERS.failedAt]: new Date(nowMs).toISOString(),
  };
  if (node) headers[DLQ_HEADERS.node] = node;
  return { topic: dlqTopic, key: source.key, value: source.value, timestamp: source.timestamp, headers };
}
