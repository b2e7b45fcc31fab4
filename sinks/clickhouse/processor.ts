import type { Processor, ProcessorSupplier, StreamRecord } from '../../topology/api.ts';
import { isReceiptRecord, rowFromOutcome, rowFromReceipt, type PushOutcomeRecord, type PushReceiptRecord } from './rows.ts';
import type { PushEventWriter } from './writer.ts';
import { PERSISTED_AT_HEADER } from '../../processors/receipt-join/join.ts';

/**
 * The ClickHouse sink as a terminal processor: attach it to the push.outcomes and push.receipts
 * sources. `process` buffers one row (and waits for a flush when the buffer is full: back
 * pressure); `flush`, which the runtime calls before every commit, resolves only once the rows are
 * stored, so offsets of rows not in ClickHouse are never committed.
 *
 * One writer may be shared by every task of the process (flushes are serialised inside it).
 * Unmatched receipts carry no task and are skipped.
 */
export function clickhouseEventSink(writer: PushEventWriter): ProcessorSupplier<string, PushOutcomeRecord | PushReceiptRecord, never, never> {
  return (): Processor<string, PushOutcomeRecord | PushReceiptRecord, never, never> => ({
    process(record: StreamRecord<string, PushOutcomeRecord | PushReceiptRecord>): void | Promise<void> {
      const value = record.value;
      if (value === null || value === undefined) return;
      const row = isReceiptRecord(value) ? rowFromReceipt(value, persistedAtHeader(record)) : rowFromOutcome(value);
      if (!row) return;
      writer.add(row);
      if (writer.bufferedRows >= writer.maxBatchRows) return writer.flush();
    },
    flush: () => writer.flush(),
  });
}

function persistedAtHeader(record: StreamRecord<unknown, unknown>): number | undefined {
  const raw = record.headers?.[PERSISTED_AT_HEADER];
  if (raw === undefined || !/^\d+$/.test(raw)) return undefined;
  return Number(raw);
}
