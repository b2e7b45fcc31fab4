/** Reading kafkajs errors without importing kafkajs' error classes everywhere. */

/** The Kafka protocol error type (e.g. `CONCURRENT_TRANSACTIONS`) of an error or of what it wraps. */
export function kafkaErrorType(error: unknown): string | undefined {
  let e = error as { type?: unknown; originalError?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; e && depth < 5; depth++) {
    if (typeof e.type === 'string') return e.type;
    e = (e.originalError ?? e.cause) as typeof e;
  }
  return undefined;
}

const FENCED = new Set(['INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED', 'INVALID_PRODUCER_ID_MAPPING', 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED']);

/** True when another producer with the same transactional id took over (this one is a zombie). */
export function isFenced(error: unknown): boolean {
  const type = kafkaErrorType(error);
  return type !== undefined && FENCED.has(type);
}

export function isConcurrentTransactions(error: unknown): boolean {
  return kafkaErrorType(error) === 'CONCURRENT_TRANSACTIONS';
}

const REBALANCING = new Set([
  'REBALANCE_IN_PROGRESS',
  'ILLEGAL_GENERATION',
  'UNKNOWN_MEMBER_ID',
  'NOT_COORDINATOR_FOR_GROUP',
  'NOT_COORDINATOR',
  'COORDINATOR_NOT_AVAILABLE',
]);

/** Errors by which kafkajs tells a group member to rejoin; kafkajs handles them itself. */
export function isRebalancing(error: unknown): boolean {
  const type = kafkaErrorType(error);
  return type !== undefined && REBALANCING.has(type);
}

/** Refusals of produced records that the broker repeats for the same records (size, validity, policy). */
const REFUSED_FOR_GOOD = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_RECORD', 'CORRUPT_MESSAGE', 'INVALID_TIMESTAMP', 'POLICY_VIOLATION']);

/** The protocol error type when the broker refused records it will refuse again, else undefined. */
export function refusedForGood(error: unknown): string | undefined {
  const type = kafkaErrorType(error);
  return type !== undefined && REFUSED_FOR_GOOD.has(type) ? type : undefined;
}
