import type { KeyValueStore, ScheduleStore, StoreDefinition, StoreSerde, TimerStore } from './stores.ts';
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
  /** True when drainChanges would have something to drain (a key changed since the last drain; a store without a changelog records none). */
  hasChanges(): boolean;
  /** Applies a changelog record during restore; records nothing. */
  restore(key: string, value: Buffer | null): void;
  /** Drops all content (a dirty close before a restore from the changelog). */
  clear(): void;
}

/**
 * The keys changed since the last drain, each with whether the changelog holds a value for it (it
 * had one at the last drain, when the changelog caught up with the store). A key created and removed
 * again between two drains was never written, so it needs no tombstone: a hold released by its ACK
 * within one commit interval costs no changelog record at all.
 */
class ChangedKeys {
  private readonly logged = new Map<string, boolean>();

  /** Call before the change, with whether the key has a value now. */
  mark(key: string, hasValue: boolean): void {
    if (!this.logged.has(key)) this.logged.set(key, hasValue);
  }

  /** The changelog entries for the changed keys (`valueOf` gives a key's current encoded value or null), then forgets them. */
  drain(valueOf: (key: string) => Buffer | null): ChangelogEntry[] {
    const out: ChangelogEntry[] = [];
    for (const [key, logged] of this.logged) {
      const value = valueOf(key);
      if (value !== null || logged) out.push({ key, value });
    }
    this.logged.clear();
    return out;
  }

  get size(): number {
    return this.logged.size;
  }

  clear(): void {
    this.logged.clear();
  }
}

/**
 * In-memory key-value store. Changes are tracked per key and serialized at drain time, so a key
 * written many times between two commits costs one changelog record.
 */
export class InMemoryKeyValueStore<V> implements KeyValueStore<V>, ChangeloggedStore {
  readonly name: string;
  readonly changelogged: boolean;
  private readonly data = new Map<string, V>();
  private readonly changed = new ChangedKeys();
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
    if (this.changelogged) this.changed.mark(key, this.data.has(key));
    this.data.set(key, value);
  }

  replaceEquivalent(key: string, value: V): void {
    if (!this.data.has(key)) throw new TypeError(`store ${this.name}: replaceEquivalent(${key}) of a key with no value; use put`);
    this.data.set(key, value);
  }

  delete(key: string): void {
    if (this.changelogged) this.changed.mark(key, this.data.has(key));
    this.data.delete(key);
  }

  entries(): IterableIterator<[string, V]> {
    return this.data.entries();
  }

  hasChanges(): boolean {
    return this.changed.size > 0;
  }

  drainChanges(): ChangelogEntry[] {
    return this.changed.drain((key) => {
      const value = this.data.get(key);
      return value === undefined ? null : this.serde.serialize(value);
    });
  }

  restore(key: string, value: Buffer | null): void {
    if (value === null) this.data.delete(key);
    else this.data.set(key, this.serde.deserialize(value));
  }

  clear(): void {
    this.data.clear();
    this.changed.clear();
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
  private readonly changed = new ChangedKeys();

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
    if (this.changelogged) this.changed.mark(key, slot !== undefined);
    if (slot === undefined) this.addSlot(key, dueMs);
    else this.moveSlot(slot, dueMs);
  }

  cancel(key: string): void {
    const slot = this.slotOf.get(key);
    if (slot === undefined) return;
    if (this.changelogged) this.changed.mark(key, true);
    this.removeSlot(slot);
  }

  dueTime(key: string): number | undefined {
    const slot = this.slotOf.get(key);
    return slot === undefined ? undefined : this.due[slot];
  }

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
      if (this.changelogged) this.changed.mark(key, true);
      this.removeSlot(top);
      out.push({ key, dueMs });
    }
    return out;
  }

  hasChanges(): boolean {
    return this.changed.size > 0;
  }

  drainChanges(): ChangelogEntry[] {
    return this.changed.drain((key) => {
      const dueMs = this.dueTime(key);
      return dueMs === undefined ? null : Buffer.from(String(dueMs));
    });
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
    this.changed.clear();
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

/**
 * A schedule (stores.ts): a binary min-heap of entries in two parallel arrays, the due times in a
 * Float64Array and the keys in a string array (the key strings are the owner's, shared, not
 * copied), ordered by due time, then key, like InMemoryTimerStore. No index by key and no
 * per-entry objects: an entry is 16 bytes.
 */
export class InMemoryScheduleStore implements ScheduleStore, ChangeloggedStore {
  readonly name: string;
  readonly changelogged = false;
  private keys: string[] = [];
  private due = new Float64Array(0);

  constructor(name: string) {
    this.name = name;
  }

  get size(): number {
    return this.keys.length;
  }

  add(key: string, dueMs: number): void {
    if (!Number.isFinite(dueMs)) throw new TypeError(`schedule store ${this.name}: due time of ${key} must be a finite number`);
    const at = this.keys.length;
    if (at >= this.due.length) this.grow(at + 1);
    this.keys.push(key);
    this.due[at] = dueMs;
    this.siftUp(at);
  }

  peekDueMs(): number | undefined {
    return this.keys.length === 0 ? undefined : this.due[0];
  }

  popDue(nowMs: number, limit = Number.POSITIVE_INFINITY): Array<{ key: string; dueMs: number }> {
    const out: Array<{ key: string; dueMs: number }> = [];
    while (out.length < limit && this.keys.length > 0 && this.due[0]! <= nowMs) {
      out.push({ key: this.keys[0]!, dueMs: this.due[0]! });
      this.removeTop();
    }
    return out;
  }

  hasChanges(): boolean {
    return false;
  }

  drainChanges(): ChangelogEntry[] {
    return [];
  }

  restore(key: string): void {
    throw new TypeError(`schedule store ${this.name} has no changelog to restore ${key} from`);
  }

  clear(): void {
    this.keys = [];
    this.due = new Float64Array(0);
  }

  private removeTop(): void {
    const lastKey = this.keys.pop()!;
    const n = this.keys.length;
    if (n === 0) return;
    this.keys[0] = lastKey;
    this.due[0] = this.due[n]!;
    this.siftDown(0);
  }

  private grow(min: number): void {
    const fresh = new Float64Array(Math.max(min, 64, this.due.length * 2));
    fresh.set(this.due);
    this.due = fresh;
  }

  /** Entry a comes before entry b: earlier due time, then smaller key. */
  private less(a: number, b: number): boolean {
    const da = this.due[a]!;
    const db = this.due[b]!;
    return da < db || (da === db && this.keys[a]! < this.keys[b]!);
  }

  private swap(a: number, b: number): void {
    const k = this.keys[a]!;
    this.keys[a] = this.keys[b]!;
    this.keys[b] = k;
    const d = this.due[a]!;
    this.due[a] = this.due[b]!;
    this.due[b] = d;
  }

  private siftUp(at: number): void {
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (!this.less(at, parent)) return;
      this.swap(at, parent);
      at = parent;
    }
  }

  private siftDown(at: number): void {
    const n = this.keys.length;
    for (;;) {
      const l = 2 * at + 1;
      if (l >= n) return;
      const child = l + 1 < n && this.less(l + 1, l) ? l + 1 : l;
      if (!this.less(child, at)) return;
      this.swap(at, child);
      at = child;
    }
  }
}

/** Builds the runtime store for a definition. */
export function createStore(definition: StoreDefinition): (KeyValueStore<unknown> | TimerStore | ScheduleStore) & ChangeloggedStore {
  const changelogged = definition.changelog ?? true;
  if (definition.kind === 'schedule') return new InMemoryScheduleStore(definition.name);
  return definition.kind === 'timer'
    ? new InMemoryTimerStore(definition.name, changelogged)
    : new InMemoryKeyValueStore(definition.name, definition.serde ?? jsonStoreSerde(), changelogged);
}
