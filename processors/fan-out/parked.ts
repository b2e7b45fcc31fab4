import type { KeyValueStore, StoreSerde, TimerStore } from '../../topology/stores.ts';
import type { PushDispatch } from '../model/records.ts';
import type { ChannelAnswer } from './ledger.ts';

/** How the last failed channel ended (decides the final outcome when every channel failed). */
export interface LastFailure {
  vendor: string;
  code: string;
  /** Every channel so far ended on quota → DROPPED quota. */
  quotaOnly: boolean;
  /** The last channel ended throttled (429) → FAILED rate_limited. */
  throttled: boolean;
}

/** Where a dispatch is in its walk over the device's channels; stored while it is parked. */
export interface DispatchProgress {
  readonly dispatch: PushDispatch;
  readonly key: string;
  readonly timestamp: number;
  /** Channel index and the call number on that channel to make next. */
  readonly channel: number;
  readonly call: number;
  /** Vendor calls made so far, all channels. */
  readonly attempts: number;
  readonly last: LastFailure;
  /** Answers of the channels tried so far (absent in progress parked by older versions). */
  readonly trail?: readonly ChannelAnswer[];
  /**
   * The vendor code of the answer the parked dispatch waits out (a 5xx, a lost connection, a 429 or
   * the vendor's pause); reported if the dispatch is evicted. Absent in progress parked by older versions.
   */
  readonly waitingOn?: string;
}

/**
 * A value of the `fan-out-parked` store: the compact form below, or a DispatchProgress object as
 * earlier versions wrote it (still read after a restore, and resumed like any other).
 */
export type ParkedValue = string | DispatchProgress;

/**
 * What a parked dispatch keeps, and why the text stays: the retry rebuilds the vendor message from
 * the dispatch (records.ts `pushMessage`), and nothing else the fan-out can read contains the title
 * and summary — im_push_task has no text, im.message.persisted is not an input here, and the
 * policy may have replaced the text by the generic pair (docs/design.md,
 * "A push wakes, it does not deliver"), which a message id alone would not tell. A reference would
 * not do, so the rendered text is kept; it is already short (the summary is cut to 100 grapheme
 * clusters by the policy). What goes is the shape: one string per parked push, a positional JSON
 * array without field names, the task id (the store key) and the record key (the uid), instead of a
 * tree of objects: ~40 % fewer changelog bytes (about 500 instead of 850 for a one-channel push)
 * and one heap object instead of a tree of seven; the memory of a parked push (~1.4–1.8 KB with its
 * timer and indexes) stays about what it was, because text with CJK characters makes the whole
 * string two bytes a character. Version 1:
 *
 *   [1, key (0 = the uid), timestamp, channel, call, attempts, waitingOn,
 *    [last.vendor, last.code, quotaOnly 0/1, throttled 0/1],
 *    [[trail channel, status, vendor, reason, code, attempts, discriminator], …],
 *    uid, device_id, conv_id, seq, msg_id, app_id, platform,
 *    [[vendor, token, classification or 0], …], title, body, badge, collapse_id, silent 0/1,
 *    kind, merged_count, persisted_at, decided_at, business?, detail?]
 *
 * The two last are left out when absent (IM pushes): `business` is 0 or [sender, category,
 * campaign_id, expire_at] (a business push resumed from the store is still checked for its expiry
 * and its campaign's cancellation, and its outcomes keep their accounting tag), `detail` the
 * dispatch's detail string. Values written before they existed decode without them.
 */
const FORMAT = 1;

export function encodeParked(p: DispatchProgress): string {
  return JSON.stringify(parkedFields(p));
}

/** The compact form's array (encodeParked). */
function parkedFields(p: DispatchProgress): unknown[] {
  const d = p.dispatch;
  const l = p.last;
  return [
    FORMAT,
    p.key === d.uid ? 0 : p.key,
    p.timestamp,
    p.channel,
    p.call,
    p.attempts,
    p.waitingOn ?? null,
    [l.vendor, l.code, l.quotaOnly ? 1 : 0, l.throttled ? 1 : 0],
    (p.trail ?? []).map((a) => [a.channel, a.status, a.vendor, a.reason, a.code, a.attempts, a.discriminator]),
    d.uid,
    d.device_id,
    d.conv_id,
    d.seq,
    d.msg_id,
    d.app_id,
    d.platform,
    d.channels.map((c) => [c.vendor, c.token, Object.keys(c.classification).length > 0 ? c.classification : 0]),
    d.title,
    d.body,
    d.badge,
    d.collapse_id,
    d.silent ? 1 : 0,
    d.kind,
    d.merged_count,
    d.persisted_at,
    d.decided_at,
    ...optionalTail(d),
  ];
}

/** `p` waiting on `waitingOn`: a literal of its fields, as kept for every push (common/objects.ts says why). */
function withWaitingOn(p: DispatchProgress, waitingOn: string): DispatchProgress {
  const { dispatch, key, timestamp, channel, call, attempts, last, trail } = p;
  return trail === undefined
    ? { dispatch, key, timestamp, channel, call, attempts, last, waitingOn }
    : { dispatch, key, timestamp, channel, call, attempts, last, trail, waitingOn };
}

/** The trailing optional elements of the compact form: none for an IM push without detail. */
function optionalTail(d: PushDispatch): unknown[] {
  const b = d.business;
  const business = b ? [b.sender, b.category, b.campaign_id, b.expire_at] : 0;
  if (d.detail != null) return [business, d.detail];
  return b ? [business] : [];
}

/** The business tag and detail of the optional tail (absent: not in the dispatch). */
function fromTail(business: unknown, detail: unknown): Pick<PushDispatch, 'business' | 'detail'> {
  const b = Array.isArray(business) ? (business as [string, string, string | null, number | null]) : undefined;
  return {
    ...(b ? { business: { sender: b[0], category: b[1], campaign_id: b[2], expire_at: b[3] } } : {}),
    ...(typeof detail === 'string' ? { detail } : {}),
  };
}

/** The progress a parked value keeps; `taskId` is its store key. Values of earlier versions are objects, returned as they are. */
export function decodeParked(taskId: string, value: ParkedValue): DispatchProgress {
  return typeof value === 'string' ? fromParkedFields(taskId, JSON.parse(value) as unknown[]) : value;
}

/** The progress a compact form's array contains (decodeParked). */
function fromParkedFields(taskId: string, v: unknown[]): DispatchProgress {
  if (v[0] !== FORMAT) throw new TypeError(`fan-out-parked ${taskId}: unknown format ${String(v[0])}`);
  const [
    ,
    key,
    timestamp,
    channel,
    call,
    attempts,
    waitingOn,
    last,
    trail,
    uid,
    deviceId,
    convId,
    seq,
    msgId,
    appId,
    platform,
    channels,
    title,
    body,
    badge,
    collapse,
    silent,
    kind,
    mergedCount,
    persistedAt,
    decidedAt,
  ] = v as [
    number,
    string | 0,
    number,
    number,
    number,
    number,
    string | null,
    [string, string, number, number],
    Array<[number, ChannelAnswer['status'], string, string, string, number, string]>,
    string,
    string,
    string,
    number,
    string,
    string,
    string,
    Array<[string, string, Record<string, string> | 0]>,
    string,
    string,
    number,
    string,
    number,
    PushDispatch['kind'],
    number,
    number,
    number,
  ];
  const dispatch: PushDispatch = {
    task_id: taskId,
    uid,
    device_id: deviceId,
    conv_id: convId,
    seq,
    msg_id: msgId,
    app_id: appId,
    platform,
    channels: channels.map(([vendor, token, classification]) => ({ vendor, token, classification: classification === 0 ? {} : classification })),
    title,
    body,
    badge,
    collapse_id: collapse,
    silent: silent === 1,
    kind,
    merged_count: mergedCount,
    persisted_at: persistedAt,
    decided_at: decidedAt,
    ...fromTail(v[26], v[27]),
  };
  return {
    dispatch,
    key: key === 0 ? uid : key,
    timestamp,
    channel,
    call,
    attempts,
    last: { vendor: last[0], code: last[1], quotaOnly: last[2] === 1, throttled: last[3] === 1 },
    trail: trail.map(([c, status, vendor, reason, code, n, discriminator]) => ({ channel: c, status, vendor, reason, code, attempts: n, discriminator })),
    ...(waitingOn === null ? {} : { waitingOn }),
  };
}

/** Changelog serde of `fan-out-parked`: the compact string as it is; an object (earlier versions) as JSON. */
export const parkedStoreSerde: StoreSerde<ParkedValue> = {
  serialize: (value) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)),
  deserialize: (data) => {
    const text = data.toString('utf8');
    return text.startsWith('[') ? text : (JSON.parse(text) as DispatchProgress);
  },
};

/**
 * `waitingOn` of a dispatch checkpointed while its calls run (the fused fan-out's commit,
 * `checkpoint`): resumed only after a restart, where it claims again first (a task already final
 * re-emits its verdict) and repeats the call that was in flight.
 */
export const IN_FLIGHT = 'IN_FLIGHT';

/**
 * `waitingOn` of a checkpointed dispatch that has already ended (a READ, an eviction: the last
 * answer of its trail) and waits only for its failed row to reach MySQL. Resumed after a restart,
 * it writes that row and emits that answer again, without claiming or calling: the row may never
 * have been written.
 */
export const ENDED = 'ENDED';

/**
 * Keys of the checkpoint entries: `~held.0`, `~held.1`, … (a task id never starts with `~`), each
 * a JSON array of up to CHECKPOINTS_PER_KEY `[task id, compact form's array]` pairs. One record per
 * commit for every dispatch checkpointed, instead of a put and a tombstone per dispatch: most are
 * checkpointed by one commit only, while their vendor call ends. The prefix is stored data: the
 * changelogs of running deployments contain it, so it keeps its spelling.
 */
const CHECKPOINT_KEY = '~held.';
const CHECKPOINTS_PER_KEY = 64;

export const isCheckpointKey = (key: string): boolean => key.startsWith(CHECKPOINT_KEY);

/** The dispatches a checkpoint entry keeps, `waitingOn` IN_FLIGHT. */
export function decodeCheckpoints(value: ParkedValue): DispatchProgress[] {
  return (JSON.parse(value as string) as Array<[string, unknown[]]>).map(([taskId, fields]) => fromParkedFields(taskId, fields));
}

function encodeCheckpoints(checkpoints: DispatchProgress[]): string {
  return JSON.stringify(checkpoints.map((p) => [p.dispatch.task_id, parkedFields(p)]));
}

/**
 * The parked dispatches of one fan-out task (docs/design.md, "fan-out"): the changelogged store,
 * the retry timers, and an index by age (decided_at, in memory, rebuilt at init) that names the
 * push to evict when the store is over its cap. A resumed dispatch leaves all three while its calls
 * run, and is parked again (with a new due time) if it has to wait once more. A checkpointed
 * dispatch (`checkpoint`) is written with the other checkpoints (`writeCheckpoints`) as long as it
 * runs: no timer resumes it and the cap does not evict it; after a restart it is parked, due at
 * once.
 */
export class ParkedDispatches {
  /** Checkpoints of the dispatches that run, by task id. */
  private readonly checkpoints = new Map<string, DispatchProgress>();
  /** Checkpoint entries in the store (`~held.<n>`), and whether `checkpoints` changed since they were written. */
  private checkpointKeys = 0;
  private checkpointsChanged = false;

  constructor(
    private readonly store: KeyValueStore<ParkedValue>,
    private readonly timers: TimerStore,
    /** Parked task ids by decision time (a store without changelog: `restore` rebuilds it), for the cap. */
    private readonly byAge: TimerStore,
    private readonly maxParked: number,
  ) {}

  /** Rebuilds the age index from a restored store, handing each parked progress to `each`. */
  restore(each: (taskId: string, p: DispatchProgress) => void): void {
    for (const [key, value] of [...this.store.entries()]) {
      if (!isCheckpointKey(key)) {
        const p = decodeParked(key, value);
        this.byAge.set(key, p.dispatch.decided_at);
        if (p.waitingOn === IN_FLIGHT || p.waitingOn === ENDED) this.timers.set(key, 0); // checkpointed, then placed by a repartition
        each(key, p);
        continue;
      }
      // Their runs ended with the process that checkpointed them: parked, due at once.
      this.store.delete(key);
      for (const p of decodeCheckpoints(value)) {
        const taskId = p.dispatch.task_id;
        if (this.store.get(taskId) !== undefined) continue;
        this.park(p, 0);
        each(taskId, p);
      }
    }
  }

  /** Dispatches parked (checkpointed ones are running). */
  get size(): number {
    return this.store.size - this.checkpointKeys;
  }

  has(taskId: string): boolean {
    return this.store.get(taskId) !== undefined;
  }

  /**
   * Checkpoints a running dispatch's progress (`waitingOn` IN_FLIGHT, or ENDED for one that has
   * ended and waits for its row), written by `writeCheckpoints`, until it parks or the returned
   * function is called (it has finished and its outputs go out). Progress already waiting on that
   * is kept as it is.
   */
  checkpoint(p: DispatchProgress, waitingOn: typeof ENDED | typeof IN_FLIGHT = p.waitingOn === ENDED ? ENDED : IN_FLIGHT): () => void {
    const taskId = p.dispatch.task_id;
    this.checkpoints.set(taskId, p.waitingOn === waitingOn ? p : withWaitingOn(p, waitingOn));
    this.checkpointsChanged = true;
    return () => {
      if (this.checkpoints.delete(taskId)) this.checkpointsChanged = true;
    };
  }

  /** Before a commit: writes the checkpoints if they changed (a record per CHECKPOINTS_PER_KEY), deleting the entries left over. */
  writeCheckpoints(): void {
    if (!this.checkpointsChanged) return;
    this.checkpointsChanged = false;
    const checkpoints = [...this.checkpoints.values()];
    const keys = Math.ceil(checkpoints.length / CHECKPOINTS_PER_KEY);
    for (let i = 0; i < keys; i++)
      this.store.put(CHECKPOINT_KEY + i, encodeCheckpoints(checkpoints.slice(i * CHECKPOINTS_PER_KEY, (i + 1) * CHECKPOINTS_PER_KEY)));
    for (let i = keys; i < this.checkpointKeys; i++) this.store.delete(CHECKPOINT_KEY + i);
    this.checkpointKeys = keys;
  }

  /** Parks (or parks again) a dispatch until `dueMs`. */
  park(p: DispatchProgress, dueMs: number): void {
    const taskId = p.dispatch.task_id;
    if (this.checkpoints.delete(taskId)) this.checkpointsChanged = true;
    this.store.put(taskId, encodeParked(p));
    this.timers.set(taskId, dueMs);
    this.byAge.set(taskId, p.dispatch.decided_at);
  }

  /** Removes a parked dispatch (cancelled by a READ) and returns it; undefined if it is not parked. */
  take(taskId: string): DispatchProgress | undefined {
    const value = this.store.get(taskId);
    this.timers.cancel(taskId);
    this.byAge.cancel(taskId);
    if (value === undefined) return undefined;
    this.store.delete(taskId);
    return decodeParked(taskId, value);
  }

  /** When the earliest parked dispatch is due (at once while over the cap); undefined when none is parked. */
  nextDueMs(): number | undefined {
    return this.size > this.maxParked ? 0 : this.timers.peekDueMs();
  }

  /** Removes and returns the dispatches due at `nowMs`, earliest first, at most `limit`. */
  takeDue(nowMs: number, limit: number): DispatchProgress[] {
    const due: DispatchProgress[] = [];
    for (const { key } of this.timers.popDue(nowMs, limit)) {
      const p = this.take(key);
      if (p) due.push(p);
    }
    return due;
  }

  /** Removes and returns the oldest parked dispatches (smallest decided_at) until the store is within its cap. */
  takeOverCap(): DispatchProgress[] {
    const evicted: DispatchProgress[] = [];
    while (this.size > this.maxParked) {
      const [oldest] = this.byAge.popDue(Number.POSITIVE_INFINITY, 1);
      if (!oldest) break;
      const p = this.take(oldest.key);
      if (p) evicted.push(p);
    }
    return evicted;
  }
}
