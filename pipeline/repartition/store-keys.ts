/**
 * Where each changelogged store entry belongs when the pipeline moves to another partition count
 * (`pushctl repartition`, docs/operations.md "Growing partitions"). A store entry lives in the task
 * of the input partition that owns it, and a task's changelog partition is its input partition; so
 * under N partitions an entry belongs to partition murmur2(owner) % N, where the owner is the
 * *input record key* (uid, campaign id, vendor message id) whose records read and write the entry.
 * The store key does not always hold it: this file says, per application and store, how to find it.
 * It is the only place that knows; test/ops/store-keys.test.ts fails when an application declares a
 * changelogged store missing here (or one here no application declares).
 */
import { keyParts } from '../../processors/model/keys.ts';
import { decodeHeld, decodeParked, encodeParked, isHeldKey, parkedStoreSerde } from '../../processors/fan-out/parked.ts';
import type { StageName } from '../apps/index.ts';

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
const leadingUid: Placement = { kind: 'owner', owner: (key) => keyParts(key)[0]! };
/** A store keyed by the uid itself. */
const uidKey: Placement = { kind: 'owner', owner: (key) => key };
const json = (value: Buffer) => JSON.parse(value.toString('utf8')) as Record<string, unknown>;

/** Every changelogged store of every application that has one, with where its entries go. */
export const STORE_PLACEMENTS: Readonly<Partial<Record<StageName, Readonly<Record<string, Placement>>>>> = {
  decisions: {
    'online-filter-devices': uidKey,
    // compositeKey(uid, device_id)
    'online-filter-presence': leadingUid,
    // compositeKey(uid, device_id, conv_id)
    'online-filter-holds': leadingUid,
    // compositeKey(uid, conv_id): the open merge windows (their timers are rebuilt from them)
    'merge-windows': leadingUid,
    'policy-tokens': uidKey,
    'policy-settings': uidKey,
    // compositeKey(vendor, app, day) → pushes sent on that day by this partition, against daily / N
    'policy-quota-ledger': { kind: 'per-partition', combine: 'shareOfSum' },
    // compositeKey(uid, device_id, conv_id), for the deferred pushes and their release timers
    'policy-deferred': leadingUid,
    'policy-deferred-timers': leadingUid,
    // With the fan-out fused behind the policy (PUSH_FAN_OUT_FUSED)
    ...fanOutStores(),
  },
  'fan-out': fanOutStores(),
  'fan-out-business': fanOutStores(),
  receipts: {
    // compositeKey(device_id, vendor): the token row names its user.
    'token-lifecycle-tokens': { kind: 'owner', owner: (_key, value) => String(json(value).uid) },
    // Keyed by the vendor message id, as push.receipts.by-message is.
    'receipt-join-messages': { kind: 'owner', owner: (key) => key },
    // compositeKey(uid, vendor, vendor message id): read beside push.outcomes, by uid
    'receipt-join-by-uid-messages': leadingUid,
  },
  business: {
    'business-tokens': uidKey,
    'business-settings': uidKey,
    // compositeKey(uid, sender, idempotency key)
    'business-idempotency': leadingUid,
    // compositeKey(uid, category)
    'business-frequency': leadingUid,
    // sender → the next free slot of its rate (rate / N per partition)
    'business-sender-rate': { kind: 'per-partition', combine: 'max' },
    // request id → the kept request, which names its user
    'business-deferred': { kind: 'owner', owner: (_key, value) => String((json(value).push as { uid: unknown }).uid) },
    'business-deferred-timers': { kind: 'companion', store: 'business-deferred' },
    'business-quota-ledger': { kind: 'per-partition', combine: 'shareOfSum' },
  },
  campaigns: {
    // campaign id (push.campaigns is keyed by it)
    'campaign-meta': { kind: 'owner', owner: (key) => key },
    // `${campaignId}|${chunk}`
    'campaign-uids': { kind: 'owner', owner: (key) => key.slice(0, key.lastIndexOf('|')) },
  },
};

/**
 * The fan-out's stores (both lanes, and the decisions' when fused): parked dispatches keyed by task
 * id, whose value keeps its input record key; the dispatches held at a commit (`~held.<n>`) are
 * split into parked ones, each resumed at once where it lands.
 */
function fanOutStores(): Readonly<Record<string, Placement>> {
  return {
    'fan-out-parked': {
      kind: 'owner',
      owner: (taskId, value) => decodeParked(taskId, parkedStoreSerde.deserialize(value)).key,
      split: (key, value) =>
        isHeldKey(key)
          ? decodeHeld(parkedStoreSerde.deserialize(value)).map((p) => [p.dispatch.task_id, parkedStoreSerde.serialize(encodeParked(p))])
          : [[key, value]],
    },
    'fan-out-retry-timers': { kind: 'companion', store: 'fan-out-parked' },
  };
}

/** The applications with state, and their stores in the order a copy handles them (companions after their stores). */
export function statefulStages(): Array<{ stage: StageName; stores: Array<[string, Placement]> }> {
  return Object.entries(STORE_PLACEMENTS).map(([stage, stores]) => ({
    stage: stage as StageName,
    stores: Object.entries(stores!).sort(([, a], [, b]) => Number(a.kind === 'companion') - Number(b.kind === 'companion')),
  }));
}
