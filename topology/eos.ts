import type { Consumer, Kafka, Message, Producer, TopicMessages } from 'kafkajs';
import { PushError, errorMessage } from '../common/errors.ts';
import { retry } from '../common/retry.ts';
import type { OutputRecord } from './task.ts';
import { isConcurrentTransactions, isFenced, isRebalancing } from './kafka-errors.ts';
import { forgetCoordinators } from './coordinator-cache.ts';
import type { Logger } from '../common/log.ts';
import { KeyPartitioner } from './partitioner.ts';

/** What one commit of a task writes. Offsets are the next offsets to read (last processed + 1). */
export interface CommitBatch {
  readonly records: readonly OutputRecord[];
  readonly changelog: readonly OutputRecord[];
  readonly offsets: ReadonlyArray<{ topic: string; partition: number; offset: string }>;
}

/** Writes a task's outputs, changelog records and input offsets according to the processing guarantee. */
export interface TaskCommitter {
  /** Prepares the committer; under exactly-once this fences any older producer of the task. */
  init(): Promise<void>;
  commit(batch: CommitBatch): Promise<void>;
  close(): Promise<void>;
}

/** The producer of this task was fenced: another instance owns the task now. */
export class TaskFencedError extends PushError {
  constructor(transactionalId: string, cause: unknown) {
    super('TASK_FENCED', `producer ${transactionalId} was fenced: ${errorMessage(cause)}`, { retriable: false, cause });
  }
}

/** A task's commit failed (its transaction aborted, or an earlier commit of it had): the task restarts from its last commit. */
export class CommitFailedError extends PushError {
  constructor(message: string, cause?: unknown) {
    super('COMMIT_FAILED', message, { retriable: true, cause });
  }
}

/**
 * At-least-once: the group refused the input offsets while it rebalanced, or the task was revoked
 * before they were sent. The outputs are written; the offsets are not committed, so the task's
 * next commit, if it still has one, must carry them again.
 */
export class OffsetsRefusedError extends PushError {
  constructor(cause: unknown) {
    super('OFFSETS_NOT_COMMITTED', `offsets not committed (the group is rebalancing): ${errorMessage(cause)}`, { retriable: true, cause });
  }
}

/** Transaction states of a task producer (after kafkajs' `transactionStateMachine.js`). */
export type TransactionState = 'uninitialized' | 'ready' | 'in-transaction' | 'committing' | 'aborting' | 'fenced' | 'closed';

const TRANSITIONS: Record<TransactionState, readonly TransactionState[]> = {
  uninitialized: ['ready', 'fenced', 'closed'],
  ready: ['in-transaction', 'closed'],
  'in-transaction': ['committing', 'aborting', 'fenced'],
  committing: ['ready', 'aborting', 'fenced'],
  aborting: ['ready', 'fenced', 'closed'],
  fenced: ['closed'],
  closed: [],
};

/** An explicit state machine; an illegal transition is a bug and throws. */
export class TransactionStateMachine {
  private current: TransactionState = 'uninitialized';

  get state(): TransactionState {
    return this.current;
  }

  to(next: TransactionState): void {
    if (!TRANSITIONS[this.current].includes(next)) {
      throw new PushError('ILLEGAL_TRANSACTION_STATE', `transaction cannot go from ${this.current} to ${next}`);
    }
    this.current = next;
  }
}

/** Largest payload of one produce call; keeps every per-partition record batch under the broker's 1 MB default. */
const MAX_CHUNK_BYTES = 512 * 1024;

/** Groups records by topic for `sendBatch`, in chunks of at most MAX_CHUNK_BYTES. */
export function toTopicMessageChunks(records: readonly OutputRecord[]): TopicMessages[][] {
  const chunks: TopicMessages[][] = [];
  let current = new Map<string, Message[]>();
  let bytes = 0;
  const close = () => {
    if (current.size > 0) chunks.push([...current].map(([topic, messages]) => ({ topic, messages })));
    current = new Map();
    bytes = 0;
  };
  for (const r of records) {
    const size = (r.key?.length ?? 0) + (r.value?.length ?? 0) + 64 + Object.entries(r.headers).reduce((n, [k, v]) => n + k.length + v.length, 0);
    if (bytes + size > MAX_CHUNK_BYTES && bytes > 0) close();
    bytes += size;
    if (!current.has(r.topic)) current.set(r.topic, []);
    const message: Message = { key: r.key, value: r.value, timestamp: String(r.timestamp), headers: r.headers };
    if (r.partition !== undefined) message.partition = r.partition;
    current.get(r.topic)!.push(message);
  }
  close();
  return chunks;
}

/** The transaction's offset commit: the input offsets grouped by topic. */
function offsetCommit(groupId: string, offsets: CommitBatch['offsets']) {
  const topics = new Map<string, Array<{ partition: number; offset: string }>>();
  for (const o of offsets) {
    if (!topics.has(o.topic)) topics.set(o.topic, []);
    topics.get(o.topic)!.push({ partition: o.partition, offset: o.offset });
  }
  return { consumerGroupId: groupId, topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })) };
}

/** Retries what kafkajs does not: CONCURRENT_TRANSACTIONS on AddOffsetsToTxn right after a commit. */
const concurrentRetry = { maxAttempts: 20, initialDelayMs: 10, maxDelayMs: 200, shouldRetry: (e: unknown) => isConcurrentTransactions(e) };

/**
 * Exactly-once: one transactional producer per task, transactional id
 * `<applicationId>-<subtopology>_<partition>`. A commit sends outputs, changelog records and input
 * offsets in one transaction. Connecting (InitProducerId) fences the task's previous producer,
 * which aborts its open transaction: so the committed offsets read after `init()` are final.
 */
export class TransactionalCommitter implements TaskCommitter {
  readonly transactionalId: string;
  private readonly producer: Producer;
  private readonly groupId: string;
  private readonly machine = new TransactionStateMachine();

  constructor(kafka: Kafka, options: { transactionalId: string; groupId: string; transactionTimeoutMs?: number; onProducer?: (producer: Producer) => void }) {
    this.transactionalId = options.transactionalId;
    this.groupId = options.groupId;
    this.producer = kafka.producer({
      transactionalId: options.transactionalId,
      idempotent: true,
      createPartitioner: KeyPartitioner,
      // Two: a commit's Produce and its offset requests overlap (commit below). Produce requests
      // themselves never overlap (one commit per task at a time, chunks in turn), so the
      // idempotent sequence numbers stay in order.
      maxInFlightRequests: 2,
      transactionTimeout: options.transactionTimeoutMs ?? 30_000,
      retry: { initialRetryTime: 30, retries: 8, maxRetryTime: 2000 },
    });
    options.onProducer?.(this.producer);
  }

  get state(): TransactionState {
    return this.machine.state;
  }

  async init(): Promise<void> {
    try {
      await this.producer.connect();
      // kafkajs' connect() asks for a producer id without the transactional id, which fences
      // nothing; the transactional InitProducerId is sent by the first transaction(). Start and
      // abort an empty one now (no partition is added, so nothing reaches the log), so the previous
      // owner is fenced and its open transaction finished before offsets are read and stores
      // restored. Without this the previous owner could still commit after both.
      await (await this.producer.transaction()).abort();
      this.machine.to('ready');
    } catch (error) {
      if (isFenced(error)) this.machine.to('fenced');
      throw isFenced(error) ? new TaskFencedError(this.transactionalId, error) : error;
    }
  }

  async commit(batch: CommitBatch): Promise<void> {
    if (batch.records.length === 0 && batch.changelog.length === 0 && batch.offsets.length === 0) return;
    const tx = await this.producer.transaction();
    this.machine.to('in-transaction');
    try {
      // The records (AddPartitionsToTxn, Produce) and the offsets (AddOffsetsToTxn, TxnOffsetCommit)
      // go out side by side: four round trips in the time of two. Both finish before EndTxn.
      const sending = (async () => {
        for (const chunk of toTopicMessageChunks([...batch.records, ...batch.changelog])) await tx.sendBatch({ topicMessages: chunk, acks: -1 });
      })();
      const offsets = batch.offsets.length > 0 ? retry(() => tx.sendOffsets(offsetCommit(this.groupId, batch.offsets)), concurrentRetry) : undefined;
      const settled = await Promise.allSettled([sending, offsets]);
      for (const s of settled) if (s.status === 'rejected') throw s.reason;
      this.machine.to('committing');
      await tx.commit();
      this.machine.to('ready');
    } catch (error) {
      if (isFenced(error)) {
        this.machine.to('fenced');
        throw new TaskFencedError(this.transactionalId, error);
      }
      forgetCoordinators(); // the failure may be a coordinator that moved (coordinator-cache.ts)
      this.machine.to('aborting');
      // The failure is reported below (COMMIT_FAILED, then a restart); an abort that fails too leaves the
      // transaction to the next owner, whose fencing (init) aborts it.
      await tx.abort().catch(() => undefined);
      this.machine.to('ready');
      throw new CommitFailedError(`transaction of ${this.transactionalId} failed: ${errorMessage(error)}`, error);
    }
  }

  async close(): Promise<void> {
    if (this.machine.state === 'closed') return;
    if (this.machine.state !== 'fenced' && this.machine.state !== 'uninitialized' && this.machine.state !== 'ready') this.machine.to('aborting');
    this.machine.to('closed');
    // Closing for good: an open transaction is aborted by the next owner's fencing or times out.
    await this.producer.disconnect().catch(() => undefined);
  }
}

/**
 * At-least-once: outputs and changelog records through one shared idempotent producer, then the
 * input offsets through the consumer group. A crash between the two replays records (duplicates
 * downstream, never loss).
 */
export class AtLeastOnceCommitter implements TaskCommitter {
  constructor(
    private readonly producer: Producer,
    private readonly consumer: () => Consumer,
    /**
     * The task is still this instance's. The group accepts an offset commit from any member of
     * its current generation for any partition, so a commit that outlived its task's revocation
     * (a flush that waited out a store outage) would move the new owner's committed offset back.
     */
    private readonly owned: () => boolean,
    private readonly logger?: Logger,
  ) {}

  async init(): Promise<void> {}

  async commit(batch: CommitBatch): Promise<void> {
    for (const chunk of toTopicMessageChunks([...batch.records, ...batch.changelog])) await this.producer.sendBatch({ topicMessages: chunk, acks: -1 });
    if (batch.offsets.length === 0) return;
    if (!this.owned()) {
      // Its next owner reads these records again (at-least-once) and commits its own offsets.
      this.logger?.info('offsets of a revoked task not committed', { offsets: batch.offsets.map((o) => `${o.topic}:${o.partition}@${o.offset}`) });
      throw new OffsetsRefusedError(new PushError('TASK_REVOKED', 'the task was revoked before its offsets were committed'));
    }
    try {
      await this.consumer().commitOffsets(batch.offsets.map((o) => ({ ...o })));
    } catch (error) {
      // During a rebalance the group refuses the commit. The records are written; the offsets go
      // into the task's next commit (a task that keeps its partition may have nothing new to
      // commit, and would leave them uncommitted for good). If the partition moves, its next
      // owner reads those records again (at-least-once).
      if (!isRebalancing(error)) throw error;
      this.logger?.info('offset commit refused during rebalance; the next commit carries the offsets', { type: (error as { type?: string }).type });
      throw new OffsetsRefusedError(error);
    }
  }

  async close(): Promise<void> {}
}
