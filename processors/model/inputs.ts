/**
 * The decisions' and the business lane's validation boundary at ingest (docs/design.md, "Ingest
 * validation"). Each source topic feeds one ingest node (`ingest`), which knows the kind of record
 * its topic carries, checks it against that kind's rules once, and hands the stages a tagged
 * `Ingested` value; the stages switch on its `kind` and never guess a record's kind from its
 * fields. A value of another shape, or one that decodes but breaks a rule of its topic (an empty or
 * oversized id, an integer outside its Avro or column range, a time stamp too far from now, an
 * unknown zone, a uid that is not the record key, ...), is a ContractError, which the runtime
 * routes to the DLQ with the rule in the reason instead of letting it reach state or become a push
 * decision. A tombstone (null value) on a compacted topic read as a table (push.tokens,
 * push.settings) becomes a `tombstone` input that deletes the key's state.
 */
import { ContractError } from '../../common/errors.ts';
import type { Processor, ProcessorContext, ProcessorSupplier, StreamRecord } from '../../topology/api.ts';
import {
  compileIngestRules,
  eventTime,
  id,
  int,
  INT32_MAX,
  knownZone,
  MAX_LENGTH,
  MAX_MUTED_CONVERSATIONS,
  text,
  versionStamp,
  type IngestOptions,
  type IngestRules,
} from './ingest.ts';
import type { MessagePersisted, PresenceEvent, TokenReport, UserSettings } from './records.ts';
import { VENDORS } from './vendors.ts';

/** The records an ingest node checks, by the kind of its source topic. */
interface IngestRecords {
  message: MessagePersisted;
  presence: PresenceEvent;
  token: TokenReport;
  settings: UserSettings;
}

export type IngestKind = keyof IngestRecords;

/** The tables among them: compacted topics whose tombstone deletes the key's state. */
export type TableKind = 'token' | 'settings';

/** An input record tagged with the kind of its topic. */
type TaggedRecord = { readonly [K in IngestKind]: { readonly kind: K; readonly value: IngestRecords[K] } }[IngestKind];

/** A checked input record, tagged with its kind; or a table's tombstone for `uid`. */
export type Ingested = TaggedRecord | { readonly kind: 'tombstone'; readonly table: TableKind; readonly uid: string };

/** A record handed over in-process (`tagged`), already checked where it was made. */
export interface HandOver<K extends string, V> {
  readonly kind: K;
  readonly value: V;
}

/** A null value where no table is read: rule `tombstone`. */
const notATable = () => new ContractError('CONTRACT_VIOLATION', 'breaks ingest rule tombstone: a null value on a topic that is not read as a table');

/** Fields every record of a kind has (its Avro schema's required ones this code reads first). */
const REQUIRED_FIELDS: { readonly [K in IngestKind]: readonly string[] } = {
  message: ['msg_id', 'persisted_at', 'seq', 'uid'],
  presence: ['kind', 'device_id', 'at', 'uid'],
  token: ['token', 'vendor', 'device_id', 'uid'],
  settings: ['time_zone', 'muted_conversations', 'uid'],
};

const VENDOR_NAMES = new Set<string>(VENDORS);

function message(m: MessagePersisted, now: number, rules: IngestRules): string | undefined {
  return (
    id('msg_id', m.msg_id, MAX_LENGTH.msgId) ??
    id('conv_id', m.conv_id, MAX_LENGTH.convId) ??
    id('app_id', m.app_id, MAX_LENGTH.appId) ??
    text('sender_uid', m.sender_uid, MAX_LENGTH.uid) ??
    text('title', m.title, MAX_LENGTH.title) ??
    text('summary', m.summary, MAX_LENGTH.summary) ??
    int('seq', m.seq, 0, Number.MAX_SAFE_INTEGER) ??
    int('unread_cnt', m.unread_cnt, 0, INT32_MAX) ??
    eventTime('persisted_at', m.persisted_at, now, rules)
  );
}

function presence(p: PresenceEvent, now: number, rules: IngestRules): string | undefined {
  const broken =
    id('device_id', p.device_id, MAX_LENGTH.deviceId) ??
    text('conv_id', p.conv_id, MAX_LENGTH.convId) ??
    (p.seq === null ? undefined : int('seq', p.seq, 0, Number.MAX_SAFE_INTEGER)) ??
    eventTime('at', p.at, now, rules);
  if (broken) return broken;
  if ((p.kind === 'ACK' || p.kind === 'READ') && (!p.conv_id || p.seq === null)) return `ack_target: ${p.kind} needs conv_id and seq`;
  return undefined;
}

function token(t: TokenReport, now: number, rules: IngestRules): string | undefined {
  const broken =
    id('device_id', t.device_id, MAX_LENGTH.deviceId) ??
    id('app_id', t.app_id, MAX_LENGTH.appId) ??
    text('platform', t.platform, MAX_LENGTH.platform) ??
    text('token', t.token, MAX_LENGTH.token) ??
    text('reason', t.reason, MAX_LENGTH.reason) ??
    text('manufacturer', t.manufacturer, MAX_LENGTH.manufacturer) ??
    versionStamp('reported_at', t.reported_at, now, rules);
  if (broken) return broken;
  if (!VENDOR_NAMES.has(t.vendor)) return `known_vendor: unknown vendor ${JSON.stringify(t.vendor.slice(0, 16))}`;
  if (t.state === 'VALID' && !t.token) return 'token_present: a VALID token report needs a token';
  return undefined;
}

function settings(s: UserSettings, now: number, rules: IngestRules): string | undefined {
  const q = s.quiet_hours;
  const broken =
    knownZone('time_zone', s.time_zone) ??
    (q ? (int('quiet_hours.start_minute', q.start_minute, 0, 1439) ?? int('quiet_hours.end_minute', q.end_minute, 0, 1439)) : undefined) ??
    versionStamp('updated_at', s.updated_at, now, rules);
  if (broken) return broken;
  const muted = s.muted_conversations;
  if (muted.length > MAX_MUTED_CONVERSATIONS) return `max_length: muted_conversations has ${muted.length} entries (max ${MAX_MUTED_CONVERSATIONS})`;
  for (const conv of muted) {
    const bad = id('muted_conversations[]', conv, MAX_LENGTH.convId);
    if (bad) return bad;
  }
  return undefined;
}

/** The first ingest rule the record breaks (`<rule>: <detail>`), or undefined. */
function violation(input: TaggedRecord, key: string | null, now: number, rules: IngestRules): string | undefined {
  const uid = id('uid', input.value.uid, MAX_LENGTH.uid);
  if (uid) return uid;
  if (key !== null && key !== input.value.uid) return 'key_is_uid: uid differs from the record key (topics are keyed by recipient uid)';
  switch (input.kind) {
    case 'message':
      return message(input.value, now, rules);
    case 'presence':
      return presence(input.value, now, rules);
    case 'token':
      return token(input.value, now, rules);
    case 'settings':
      return settings(input.value, now, rules);
  }
}

/**
 * The ingest node of a source topic carrying records of `kind`: checks each against the ingest
 * rules (`options`: PUSH_INGEST_*, default their defaults) at the stage's wall clock and forwards it
 * tagged, or throws a ContractError naming the broken rule (the runtime dead-letters the record).
 * A tombstone passes as a `tombstone` input on a table's topic and is refused on any other.
 */
export function ingest(kind: IngestKind, options: IngestOptions = {}): ProcessorSupplier<string, unknown, string, Ingested> {
  const rules = compileIngestRules(options);
  return () => new IngestNode(kind, rules);
}

class IngestNode implements Processor<string, unknown, string, Ingested> {
  private ctx!: ProcessorContext<string, Ingested>;

  constructor(
    private readonly kind: IngestKind,
    private readonly rules: IngestRules,
  ) {}

  init(context: ProcessorContext<string, Ingested>): void {
    this.ctx = context;
  }

  process(record: StreamRecord<string, unknown>): void {
    const { kind } = this;
    const value = record.value;
    if (value === null) {
      if (kind !== 'token' && kind !== 'settings') throw notATable();
      const broken = id('key', record.key, MAX_LENGTH.uid);
      if (broken) throw new ContractError('CONTRACT_VIOLATION', `${kind === 'token' ? 'tokens' : 'settings'} tombstone breaks ingest rule ${broken}`);
      return this.ctx.forward({
        key: record.key,
        value: { kind: 'tombstone', table: kind, uid: record.key },
        timestamp: record.timestamp,
        headers: record.headers,
      });
    }
    if (typeof value !== 'object' || !REQUIRED_FIELDS[kind].every((f) => f in value)) {
      throw new ContractError('UNEXPECTED_RECORD', `record is not a ${kind} record (its topic's schema)`);
    }
    const input = { kind, value } as TaggedRecord;
    const broken = violation(input, record.key, this.ctx.wallClockTimeMs(), this.rules);
    if (broken) throw new ContractError('CONTRACT_VIOLATION', `${kind} record breaks ingest rule ${broken}`);
    this.ctx.forward({ key: record.key, value: input, timestamp: record.timestamp, headers: record.headers });
  }
}

/**
 * Tags an in-process hand-over (the merge's notification for the policy, a business request) with
 * its kind, so the next stage's input is one tagged union with the ingest nodes' records. It checks
 * only that a value is there (a null one breaks rule `tombstone`): what it passes was made from
 * checked input, or is checked by the stage itself.
 */
export function tagged<K extends string, V>(kind: K): ProcessorSupplier<string, V, string, HandOver<K, V>> {
  return () => new Tagger<K, V>(kind);
}

class Tagger<K extends string, V> implements Processor<string, V, string, HandOver<K, V>> {
  private ctx!: ProcessorContext<string, HandOver<K, V>>;

  constructor(private readonly kind: K) {}

  init(context: ProcessorContext<string, HandOver<K, V>>): void {
    this.ctx = context;
  }

  process(record: StreamRecord<string, V>): void {
    if (record.value === null) throw notATable();
    this.ctx.forward({ key: record.key, value: { kind: this.kind, value: record.value }, timestamp: record.timestamp, headers: record.headers });
  }
}
