/**
 * Where each changelogged store entry belongs when the pipeline moves to another partition count
 * (`pushctl repartition`, docs/operations.md "Growing partitions"). A store entry lives in the task
 * of the input partition that owns it, and a task's changelog partition is its input partition; so
 * under N partitions an entry belongs to partition murmur2(owner) % N, where the owner is the
 * *input record key* (uid, campaign id, vendor message id) whose records read and write the entry.
 * The store key does not always hold it: each stage's definition (pipeline/apps/<stage>.ts,
 * `stores`) says, per changelogged store, how to find it, with the kinds of placement declared here.
 * test/pipeline/repartition/store-keys.test.ts fails when an application has a changelogged store its definition does
 * not place (or places one it does not have).
 */
import { keyParts } from '../../processors/model/keys.ts';

/** How a store entry finds its partition under the new count. */
export type Placement =
  /**
   * The owning input key, from the store key and (for some stores) its encoded value. `split`
   * first turns an entry that several owners share into one entry each.
   */
  | { readonly kind: 'owner'; owner(key: string, value: Buffer): string; split?(key: string, value: Buffer): Array<[string, Buffer]> }
  /**
   * A timer keyed exactly like an entry of `store` (same application): it goes where that entry
   * goes. A timer whose entry is gone has nothing left to fire for and is dropped.
   */
  | { readonly kind: 'companion'; readonly store: string }
  /**
   * No owner: each partition keeps its own entry under the same key, sized by the partition count
   * (a quota ledger's share, a sender's rate slot). The old partitions' entries of a key are
   * combined into one value that every new partition gets: `shareOfSum` (a count used against
   * `total / N`: each new partition starts with ceil(sum / N), so the N partitions together have
   * used at least what the old ones had, and no more than the total can be spent) or `max` (a
   * time before which nothing may happen: the latest of them).
   */
  | { readonly kind: 'per-partition'; readonly combine: 'shareOfSum' | 'max' };

/** The uid that leads a compositeKey(uid, …). */
export const leadingUid: Placement = { kind: 'owner', owner: (key) => keyParts(key)[0]! };
/** A store keyed by the uid itself. */
export const uidKey: Placement = { kind: 'owner', owner: (key) => key };
/** A JSON store value, for owners named in it. */
export const storedJson = (value: Buffer) => JSON.parse(value.toString('utf8')) as Record<string, unknown>;
