/**
 * How large a record is to the broker, and the default limit the runtime holds outputs to
 * (docs/design.md, "Poison records and restarts").
 *
 * The broker refuses a record batch larger than the topic's `max.message.bytes` (broker default
 * `message.max.bytes` = 1,048,588). A record that is alone in its batch (topology/eos.ts sends
 * records over half a megabyte in a produce call of their own) costs the batch header (61 bytes)
 * plus its own framing: length, attributes, timestamp and offset deltas, key and value lengths and
 * header count, at most 36 bytes of varints. Each header adds two length varints (at most 10
 * bytes, counted in recordBytes below). So key + value + headers may use the limit less 128 bytes.
 */

/** The broker's default `message.max.bytes`. */
export const BROKER_DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;

/** Record-batch header and per-record framing, rounded up. */
export const RECORD_BATCH_OVERHEAD_BYTES = 128;

/** Largest key + value + headers (recordBytes) of one output record by default. */
export const DEFAULT_MAX_RECORD_BYTES = BROKER_DEFAULT_MAX_MESSAGE_BYTES - RECORD_BATCH_OVERHEAD_BYTES;

/** Length varints of one header (key length and value length). */
const HEADER_FRAMING_BYTES = 10;

/** Exact size of a record as recordBytes counts it: key, value, header names and values (UTF-8) and header framing. */
export function recordBytes(key: Buffer | null, value: Buffer | null, headers: Readonly<Record<string, string>>): number {
  let size = (key?.length ?? 0) + (value?.length ?? 0);
  for (const name in headers) size += Buffer.byteLength(name) + Buffer.byteLength(headers[name]!) + HEADER_FRAMING_BYTES;
  return size;
}

/**
 * The record's size when it is over `limit`, else 0. The hot path allocates nothing and encodes
 * nothing: buffer lengths plus an upper bound of the headers (3 UTF-8 bytes per UTF-16 unit); only
 * a record whose bound is over the limit is measured exactly.
 */
export function oversizeBytes(key: Buffer | null, value: Buffer | null, headers: Readonly<Record<string, string>>, limit: number): number {
  let bound = (key?.length ?? 0) + (value?.length ?? 0);
  for (const name in headers) bound += 3 * (name.length + headers[name]!.length) + HEADER_FRAMING_BYTES;
  if (bound <= limit) return 0;
  const exact = recordBytes(key, value, headers);
  return exact > limit ? exact : 0;
}
