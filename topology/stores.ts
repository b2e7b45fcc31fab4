/**
 * State store interfaces seen by processors. Implementations (in-memory, backed by a compacted
 * changelog topic per store and task) live in the runtime; the TopologyTestDriver uses the same
 * implementations with an in-process changelog.
 *
 * Keys are strings (processors build composite keys such as `${uid}|${convId}`); values are
 * encoded with the store's serde when written to the changelog.
 */
export interface KeyValueStore<V> {
  readonly name: string;
  get(key: string): V | undefined;
  /** Writes the value and records the change for the changelog. */
  put(key: string, value: V): void;
  /**
   * Replaces the value of a key without a changelog record, for a value its owner treats exactly
   * as the one last written: the same state seen later in time (e.g. a merge window past its end,
   * closed with nothing to send). A restore yields the value last written, which the owner must
   * turn into this one by itself. A key already written since the last commit keeps its record,
   * which then carries this value.
   */
  replaceEquivalent(key: string, value: V): void;
  /** Removes the key (a tombstone in the changelog). */
  delete(key: string): void;
  /** All entries, in no particular order. Do not mutate the store while iterating. */
  entries(): IterableIterator<[string, V]>;
  readonly size: number;
}

/**
 * A set of timers: key → due time (epoch ms), changelogged unless its definition says otherwise
 * (timerStore). Used for hold windows and deferred releases, so that a punctuator finds what is
 * due without scanning every key.
 */
export interface TimerStore {
  readonly name: string;
  /** Sets (or moves) the timer of `key` to `dueMs`. */
  set(key: string, dueMs: number): void;
  cancel(key: string): void;
  dueTime(key: string): number | undefined;
  /** Removes and returns, in due-time order, every key due at or before `nowMs`. */
  popDue(nowMs: number, limit?: number): Array<{ key: string; dueMs: number }>;
  /** The earliest due time held, or undefined when empty. */
  peekDueMs(): number | undefined;
  readonly size: number;
}

/**
 * A schedule of (key, due time) entries for an owner whose own state already holds each key's true
 * due time (e.g. the merge windows, whose encoded value starts with it). Unlike a TimerStore it
 * keeps no key index, so an entry costs two words instead of a map entry plus a heap slot: at a
 * million keys that is the difference between ~20 and ~55 MB. The price is that moving a key's
 * due time leaves its earlier entry behind: the owner adds an entry whenever a key's due time
 * changes and, for each entry popDue returns, acts only if it is still the key's due time. A stale
 * entry leaves when its own due time passes. Never changelogged: the owner rebuilds it from its
 * state after a restore (when `size` is 0 at init).
 */
export interface ScheduleStore {
  readonly name: string;
  /** Adds an entry; the same (key, due) may be added again, each entry is returned once. */
  add(key: string, dueMs: number): void;
  /** Removes and returns, in (due time, key) order, every entry due at or before `nowMs`. */
  popDue(nowMs: number, limit?: number): Array<{ key: string; dueMs: number }>;
  /** The earliest entry's due time (it may be stale), or undefined when empty. */
  peekDueMs(): number | undefined;
  /** Entries held, stale ones included. */
  readonly size: number;
}

/** How a store's values go to and from its changelog topic. */
export interface StoreSerde<V> {
  serialize(value: V): Buffer;
  deserialize(data: Buffer): V;
}

export const jsonStoreSerde = <V>(): StoreSerde<V> => ({
  serialize: (value) => Buffer.from(JSON.stringify(value)),
  deserialize: (data) => JSON.parse(data.toString('utf8')) as V,
});

export interface StoreDefinition {
  readonly name: string;
  readonly kind: 'kv' | 'timer' | 'schedule';
  readonly serde?: StoreSerde<unknown>;
  /** Changelog backing; default true (a schedule store never has one). */
  readonly changelog?: boolean;
}

export const keyValueStore = <V>(name: string, serde: StoreSerde<V> = jsonStoreSerde<V>()): StoreDefinition => ({
  name,
  kind: 'kv',
  serde: serde as StoreSerde<unknown>,
});

/**
 * A TimerStore. `changelog: false` keeps it in memory only, for an owner that rebuilds it from its
 * own changelogged state at init (so a key and its timer cost one changelog record, not two).
 */
export const timerStore = (name: string, options: { changelog?: boolean } = {}): StoreDefinition => ({
  name,
  kind: 'timer',
  ...(options.changelog === false ? { changelog: false } : {}),
});

/** A ScheduleStore: in memory only, rebuilt by its owner from its own state. */
export const scheduleStore = (name: string): StoreDefinition => ({ name, kind: 'schedule', changelog: false });
