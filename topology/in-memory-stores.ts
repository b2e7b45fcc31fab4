import type { KeyValueStore, StoreDefinition, StoreSerde, TimerStore } from './stores.ts';
import { jsonStoreSerde } from './stores.ts';

/** One pending changelog write: the latest value of a key since the last commit (null = tombstone). */
export interface ChangelogEntry {
  readonly key: string;
  readonly value: Buffer | null;
}

/** What the runtime needs of every store besides the processor-facing interface. */
export interface ChangeloggedStore {
  readonly name: string;
  readonly changelogged: boolean;
  /** Changes since the last drain, one per key (last write wins), serialized. */
  drainChanges(): ChangelogEntry[];
  /** Applies a changelog record during restore; records nothing. */
  restore(key: string, value: Buffer | null): void;
  /** Drops all content (a dirty close before a restore from the changelog). */
  clear(): void;
}

/**
 * In-memory key-value store. Changes are tracked per key and serialized at drain time, so a key
 * written many times between two commits costs one changelog record.
 */
export class InMemoryKeyValueStore<V> implements KeyValueStore<V>, ChangeloggedStore {
  readonly name: string;
  readonly changelogged: boolean;
  private readonly data = new Map<string, V>();
  private readonly dirty = new Set<string>();
  private readonly serde: StoreSerde<V>;

  constructor(name: string, serde: StoreSerde<V> = jsonStoreSerde<V>(), changelogged = true) {
    this.name = name;
    this.serde = serde;
    this.changelogged = changelogged;
  }

  get size(): number {
    return this.data.size;
  }

  get(key: string): V | undefined {
    return this.data.get(key);
  }

  put(key: string, value: V): void {
    if (value === undefined || value === null) throw new TypeError(`store ${this.name}: put(${key}) with no value; use delete`);
    this.data.set(key, value);
    if (this.changelogged) this.dirty.add(key);
  }

  delete(key: string): void {
    this.data.delete(key);
    if (this.changelogged) this.dirty.add(key);
  }

  entries(): IterableIterator<[string, V]> {
    return this.data.entries();
  }

  drainChanges(): ChangelogEntry[] {
    const out: ChangelogEntry[] = [];
    for (const key of this.dirty) {
      const value = this.data.get(key);
      out.push({ key, value: value === undefined ? null : this.serde.serialize(value) });
    }
    this.dirty.clear();
    return out;
  }

  restore(key: string, value: Buffer | null): void {
    if (value === null) this.data.delete(key);
    else this.data.set(key, this.serde.deserialize(value));
  }

  clear(): void {
    this.data.clear();
    this.dirty.clear();
  }
}

/**
 * Timers keyed by string, kept compact because a busy task holds a million of them: each timer is a
 * slot (a small integer) with its key in a string array and its due time in a Float64Array; an
 * indexed binary min-heap of slots (Int32Array, with each slot's heap position) orders them by due
 * time, then key. Moving or cancelling a timer updates the heap in place, so there are no stale
 * entries and no per-timer objects. The changelog value is the due time as a decimal string.
 */
export class InMemoryTimerStore implements TimerStore, ChangeloggedStore {
  readonly name: string;
  readonly changelogged: boolean;
  private readonly slotOf = new Map<string, number>();
  private keys: Array<string | undefined> = [];
  private due = new Float64Array(0);
  /** Heap position of each slot. */
  private pos = new Int32Array(0);
  /** The heap: slots, earliest first. */
  private heap = new Int32Array(0);
  private heapSize = 0;
  private freeSlots: number[] = [];
  private readonly dirty = new Set<string>();

  constructor(name: string, changelogged = true) {
    this.name = name;
    this.changelogged = changelogged;
  }

  get size(): number {
    return this.slotOf.size;
  }

  set(key: string, dueMs: number): void {
    if (!Number.isFinite(dueMs)) throw new TypeError(`timer store ${this.name}: due time of ${key} must be a finite number`);
    const slot = this.slotOf.get(key);
    if (slot !== undefined && this.due[slot] === dueMs) return;
    if (slot === undefined) this.addSlot(key, dueMs);
    else this.moveSlot(slot, dueMs);
    if (this.changelogged) this.dirty.add(key);
  }

  cancel(key: string): void {
    const slot = this.slotOf.get(key);
    if (slot === undefined) return;
    this.removeSlot(slot);
    if (this.changelogged) this.dirty.add(key);
  }

  dueTime(key: string): number | undefined {
    const slot = this.slotOf.get(key);
    return slot === undefined ? undefined : this.due[slot];
  }

  /** Earliest due time, or undefined when empty. */
  peekDueMs(): number | undefined {
    return this.heapSize === 0 ? undefined : this.due[this.heap[0]!];
  }

  popDue(nowMs: number, limit = Number.POSITIVE_INFINITY): Array<{ key: string; dueMs: number }> {
    const out: Array<{ key: string; dueMs: number }> = [];
    while (out.length < limit && this.heapSize > 0) {
      const top = this.heap[0]!;
      const dueMs = this.due[top]!;
      if (dueMs > nowMs) break;
      const key = this.keys[top]!;
      this.removeSlot(top);
      if (this.changelogged) this.dirty.add(key);
      out.push({ key, dueMs });
    }
    return out;
  }

  drainChanges(): ChangelogEntry[] {
    const out: ChangelogEntry[] = [];
    for (const key of this.dirty) {
      const dueMs = this.dueTime(key);
      out.push({ key, value: dueMs === undefined ? null : Buffer.from(String(dueMs)) });
    }
    this.dirty.clear();
    return out;
  }

  restore(key: string, value: Buffer | null): void {
    if (value === null) {
      const slot = this.slotOf.get(key);
      if (slot !== undefined) this.removeSlot(slot);
    } else {
      this.setQuietly(key, Number(value.toString('latin1')));
    }
  }

  clear(): void {
    this.slotOf.clear();
    this.keys = [];
    this.due = new Float64Array(0);
    this.pos = new Int32Array(0);
    this.heap = new Int32Array(0);
    this.heapSize = 0;
    this.freeSlots = [];
    this.dirty.clear();
  }

  private setQuietly(key: string, dueMs: number): void {
    const slot = this.slotOf.get(key);
    if (slot === undefined) this.addSlot(key, dueMs);
    else this.moveSlot(slot, dueMs);
  }

  private moveSlot(slot: number, dueMs: number): void {
    this.due[slot] = dueMs;
    this.siftDown(this.siftUp(this.pos[slot]!));
  }

  private addSlot(key: string, dueMs: number): void {
    const slot = this.freeSlots.pop() ?? this.keys.length;
    if (slot >= this.due.length) this.grow(slot + 1);
    this.keys[slot] = key;
    this.due[slot] = dueMs;
    this.slotOf.set(key, slot);
    this.place(this.heapSize++, slot);
    this.siftUp(this.heapSize - 1);
  }

  private removeSlot(slot: number): void {
    const at = this.pos[slot]!;
    const last = this.heap[--this.heapSize]!;
    if (at < this.heapSize) {
      this.place(at, last);
      this.siftDown(this.siftUp(at));
    }
    this.slotOf.delete(this.keys[slot]!);
    this.keys[slot] = undefined;
    this.freeSlots.push(slot);
  }

  private grow(min: number): void {
    const capacity = Math.max(min, 64, this.due.length * 2);
    const resize = <A extends Float64Array | Int32Array>(old: A, fresh: A): A => (fresh.set(old), fresh);
    this.due = resize(this.due, new Float64Array(capacity));
    this.pos = resize(this.pos, new Int32Array(capacity));
    this.heap = resize(this.heap, new Int32Array(capacity));
  }

  private place(at: number, slot: number): void {
    this.heap[at] = slot;
    this.pos[slot] = at;
  }

  /** Slot a fires before slot b: earlier due time, then smaller key. */
  private less(a: number, b: number): boolean {
    const da = this.due[a]!;
    const db = this.due[b]!;
    return da < db || (da === db && this.keys[a]! < this.keys[b]!);
  }

  /** Moves the entry at heap position `at` up; returns its final position. */
  private siftUp(at: number): number {
    const h = this.heap;
    const slot = h[at]!;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (!this.less(slot, h[parent]!)) break;
      this.place(at, h[parent]!);
      at = parent;
    }
    this.place(at, slot);
    return at;
  }

  private siftDown(at: number): void {
    const h = this.heap;
    const slot = h[at]!;
    for (;;) {
      const l = 2 * at + 1;
      if (l >= this.heapSize) break;
      const r = l + 1;
      const child = r < this.heapSize && this.less(h[r]!, h[l]!) ? r : l;
      if (!this.less(h[child]!, slot)) break;
      this.place(at, h[child]!);
      at = child;
    }
    this.place(at, slot);
  }
}

/** Builds the runtime store for a definition. */
export function createStore(definition: StoreDefinition): (KeyValueStore<unknown> | TimerStore) & ChangeloggedStore {
  const changelogged = definition.changelog ?? true;
  return definition.kind === 'timer'
    ? new InMemoryTimerStore(definition.name, changelogged)
    : new InMemoryKeyValueStore(definition.name, definition.serde ?? jsonStoreSerde(), changelogged);
}
