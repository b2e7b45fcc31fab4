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
 * Timers keyed by string: a map key → due time plus a binary min-heap of (due, key) entries. Moving
 * or cancelling a timer leaves a stale heap entry that `popDue` skips; the heap is rebuilt when
 * stale entries outnumber live ones. The changelog value is the due time as a decimal string.
 */
export class InMemoryTimerStore implements TimerStore, ChangeloggedStore {
  readonly name: string;
  readonly changelogged: boolean;
  private readonly due = new Map<string, number>();
  private heap: Array<{ dueMs: number; key: string }> = [];
  private readonly dirty = new Set<string>();

  constructor(name: string, changelogged = true) {
    this.name = name;
    this.changelogged = changelogged;
  }

  get size(): number {
    return this.due.size;
  }

  set(key: string, dueMs: number): void {
    if (!Number.isFinite(dueMs)) throw new TypeError(`timer store ${this.name}: due time of ${key} must be a finite number`);
    if (this.due.get(key) === dueMs) return;
    this.setQuietly(key, dueMs);
    if (this.changelogged) this.dirty.add(key);
  }

  cancel(key: string): void {
    if (!this.due.delete(key)) return;
    if (this.changelogged) this.dirty.add(key);
    this.maybeCompact();
  }

  dueTime(key: string): number | undefined {
    return this.due.get(key);
  }

  /** Earliest live due time, or undefined when empty. */
  peekDueMs(): number | undefined {
    this.dropStaleTop();
    return this.heap[0]?.dueMs;
  }

  popDue(nowMs: number, limit = Number.POSITIVE_INFINITY): Array<{ key: string; dueMs: number }> {
    const out: Array<{ key: string; dueMs: number }> = [];
    while (out.length < limit) {
      this.dropStaleTop();
      const top = this.heap[0];
      if (!top || top.dueMs > nowMs) break;
      this.popTop();
      this.due.delete(top.key);
      if (this.changelogged) this.dirty.add(top.key);
      out.push(top);
    }
    return out;
  }

  drainChanges(): ChangelogEntry[] {
    const out: ChangelogEntry[] = [];
    for (const key of this.dirty) {
      const dueMs = this.due.get(key);
      out.push({ key, value: dueMs === undefined ? null : Buffer.from(String(dueMs)) });
    }
    this.dirty.clear();
    return out;
  }

  restore(key: string, value: Buffer | null): void {
    if (value === null) {
      this.due.delete(key);
      this.maybeCompact();
    } else {
      this.setQuietly(key, Number(value.toString('utf8')));
    }
  }

  clear(): void {
    this.due.clear();
    this.heap = [];
    this.dirty.clear();
  }

  private setQuietly(key: string, dueMs: number): void {
    this.due.set(key, dueMs);
    this.push({ dueMs, key });
    this.maybeCompact();
  }

  private dropStaleTop(): void {
    while (this.heap.length > 0) {
      const top = this.heap[0]!;
      if (this.due.get(top.key) === top.dueMs) return;
      this.popTop();
    }
  }

  private maybeCompact(): void {
    if (this.heap.length < 1024 || this.heap.length < 2 * this.due.size) return;
    this.heap = [...this.due].map(([key, dueMs]) => ({ key, dueMs }));
    for (let i = (this.heap.length >> 1) - 1; i >= 0; i--) this.siftDown(i);
  }

  private less(a: { dueMs: number; key: string }, b: { dueMs: number; key: string }): boolean {
    return a.dueMs < b.dueMs || (a.dueMs === b.dueMs && a.key < b.key);
  }

  private push(entry: { dueMs: number; key: string }): void {
    const h = this.heap;
    h.push(entry);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(h[i]!, h[parent]!)) break;
      [h[i], h[parent]] = [h[parent]!, h[i]!];
      i = parent;
    }
  }

  private popTop(): void {
    const h = this.heap;
    const last = h.pop()!;
    if (h.length === 0) return;
    h[0] = last;
    this.siftDown(0);
  }

  private siftDown(start: number): void {
    const h = this.heap;
    let i = start;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && this.less(h[l]!, h[m]!)) m = l;
      if (r < h.length && this.less(h[r]!, h[m]!)) m = r;
      if (m === i) return;
      [h[i], h[m]] = [h[m]!, h[i]!];
      i = m;
    }
  }
}

/** Builds the runtime store for a definition. */
export function createStore(definition: StoreDefinition): (KeyValueStore<unknown> | TimerStore) & ChangeloggedStore {
  const changelogged = definition.changelog ?? true;
  return definition.kind === 'timer'
    ? new InMemoryTimerStore(definition.name, changelogged)
    : new InMemoryKeyValueStore(definition.name, definition.serde ?? jsonStoreSerde(), changelogged);
}
