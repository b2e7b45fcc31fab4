/** Reading a topic from its start in a test, until what was read is enough. */
import type { Kafka } from 'kafkajs';
import { uniqueName } from './stack.ts';

/**
 * Reads `topic` (read_committed, from the beginning, values decoded by `decode`) until `done` holds
 * for what was read or `waitMs` passed; returns what was read either way.
 */
export async function readUntil<T>(
  kafka: Kafka,
  topic: string,
  decode: (value: Buffer) => unknown,
  done: (read: readonly T[]) => boolean,
  waitMs: number,
): Promise<T[]> {
  const consumer = kafka.consumer({ groupId: uniqueName('test-reader'), maxWaitTimeInMs: 100, readUncommitted: false });
  const out: T[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) if (m.value) out.push((await decode(m.value)) as T);
      },
    });
    const deadline = Date.now() + waitMs;
    while (!done(out) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    return out;
  } finally {
    await consumer.disconnect();
  }
}
