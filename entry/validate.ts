/**
 * Request validation of the HTTP entry (docs/entry.md): a JSON body becomes a push.requests or a
 * push.campaigns record, or a FieldError naming the first field that is wrong. Unknown fields are
 * refused (a typo such as `tilte` must not be dropped silently). The sender is never taken from the
 * body: it is the business of the API key.
 */
import { createHash } from 'node:crypto';
import { ContractError } from '../common/errors.ts';
import { BUSINESS_LIMITS, transfer } from '../processors/business/transfer.ts';
import type { Template } from '../processors/business/options.ts';
import { MAX_LENGTH, id, text, type IngestRules } from '../processors/model/ingest.ts';
import {
  MAX_CAMPAIGN_ID,
  campaignRequestKey,
  contentOf,
  CATEGORY_SYMBOLS,
  PRIORITY_SYMBOLS,
  type PushCampaignRecord,
  type PushCategory,
  type PushContent,
  type PushPriority,
  type PushRequestRecord,
} from '../processors/campaigns/records.ts';

/** A 400 answer: `{"error": {"field": ..., "message": ...}}`. */
export class FieldError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

export const LIMITS = {
  /** Sender ids, app ids, template ids, collapse keys, idempotency keys, campaign ids. */
  id: 64,
  /** The business transfer's own bounds (processors/business/transfer.ts), so a 202 is not dead-lettered later. */
  title: BUSINESS_LIMITS.title,
  body: BUSINESS_LIMITS.body,
  /** Entries of template_params and of data. */
  mapEntries: BUSINESS_LIMITS.dataEntries,
  mapKey: 64,
  mapValue: 1_024,
} as const;

const ID_CHARS = /^[A-Za-z0-9._:-]+$/;
const CONTENT_FIELDS = [
  'app_id',
  'category',
  'priority',
  'title',
  'body',
  'template_id',
  'template_params',
  'data',
  'collapse_key',
  'expire_at',
  'idempotency_key',
];
const REQUEST_FIELDS = new Set([...CONTENT_FIELDS, 'uid', 'device_id']);
const CAMPAIGN_FIELDS = new Set([...CONTENT_FIELDS, 'uids']);

export interface ParseContext {
  /** The API key's business. */
  readonly sender: string;
  /** Epoch ms of the request. */
  readonly now: number;
  /** The `Idempotency-Key` header, when sent. */
  readonly idempotencyHeader?: string;
  /** Makes an id when the sender gave no idempotency key. */
  readonly newId: () => string;
  /** The pipeline's own checks of a request (`transferCheck`), run last; throws a FieldError. */
  readonly check?: (request: PushRequestRecord) => void;
}

/**
 * The business transfer's checks (processors/business/transfer.ts: templates and their parameters,
 * the rendered text's length, data size, times) on a request the entry would produce, so that what
 * the pipeline would dead-letter is answered 400 here instead. The field is the one the rule names.
 */
export function transferCheck(templates: Readonly<Record<string, Template>>, rules: IngestRules): (request: PushRequestRecord) => void {
  return (r) => {
    try {
      transfer(r, r.uid, r.requested_at, rules, templates);
    } catch (error) {
      if (!(error instanceof ContractError)) throw error;
      const rule = error.message.replace(/^push request breaks rule /, '');
      const [first, second] = rule.split(/[: ]+/);
      throw new FieldError(second && REQUEST_FIELDS.has(second) ? second : (first ?? 'body'), rule);
    }
  };
}

/** POST /v1/pushes. */
export function parsePushBody(body: unknown, ctx: ParseContext): PushRequestRecord {
  const o = object(body, REQUEST_FIELDS);
  const uid = identifier(o, 'uid', MAX_LENGTH.uid, true, false)!;
  const deviceId = identifier(o, 'device_id', MAX_LENGTH.deviceId, false, false);
  const request: PushRequestRecord = {
    uid,
    ...content(o, ctx, 'NOTICE', 'NORMAL'),
    idempotency_key: idempotencyKey(o, ctx),
    device_id: deviceId,
    campaign_id: null,
    requested_at: ctx.now,
  };
  ctx.check?.(request);
  return request;
}

/**
 * POST /v1/campaigns. The campaign id is derived from the sender and the caller's idempotency key
 * (or a new id), so a retried POST names the same campaign, which the expansion creates once.
 */
export function parseCampaignBody(body: unknown, ctx: ParseContext, maxUids: number): PushCampaignRecord {
  const o = object(body, CAMPAIGN_FIELDS);
  const raw = o.uids;
  if (!Array.isArray(raw) || raw.length === 0) throw new FieldError('uids', 'expected a non-empty array of uids');
  const uids = new Set<string>();
  raw.forEach((uid: unknown, i) => {
    const field = `uids[${i}]`;
    if (typeof uid !== 'string') throw new FieldError(field, 'expected a string');
    const broken = id(field, uid, MAX_LENGTH.uid);
    if (broken) throw new FieldError(field, broken);
    uids.add(uid);
  });
  if (uids.size > maxUids) throw new FieldError('uids', `${uids.size} distinct uids (max ${maxUids} per campaign, PUSH_CAMPAIGN_MAX_UIDS)`);
  const key = idempotencyKey(o, ctx);
  const campaign: PushCampaignRecord = {
    campaign_id: campaignIdFor(ctx.sender, key),
    action: 'CREATE',
    ...content(o, ctx, 'CAMPAIGN', 'LOW'),
    uids: [...uids],
    uid_file: null,
    requested_at: ctx.now,
  };
  // Every request of the campaign has the same content: checking the first checks them all.
  const first = campaign.uids[0]!;
  ctx.check?.({
    ...contentOf(campaign),
    uid: first,
    idempotency_key: campaignRequestKey(campaign.campaign_id, first),
    device_id: null,
    campaign_id: campaign.campaign_id,
    requested_at: ctx.now,
  });
  return campaign;
}

/** `c_` and 32 hex digits of sha256(sender, key): unique per sender, and fits push_campaign.campaign_id. */
export function campaignIdFor(sender: string, key: string): string {
  return `c_${createHash('sha256').update(`${sender}\n${key}`).digest('hex').slice(0, 32)}`;
}

/** A campaign id from a URL path. */
export function campaignIdOf(raw: string): string {
  let value: string;
  try {
    value = decodeURIComponent(raw);
  } catch {
    throw new FieldError('campaign_id', 'not a valid URL path segment');
  }
  if (value === '' || value.length > MAX_CAMPAIGN_ID || !ID_CHARS.test(value))
    throw new FieldError('campaign_id', `expected 1–${MAX_CAMPAIGN_ID} of [A-Za-z0-9._:-]`);
  return value;
}

function content(o: Record<string, unknown>, ctx: ParseContext, category: PushCategory, priority: PushPriority): PushContent {
  const title = optionalText(o, 'title', LIMITS.title);
  const body = optionalText(o, 'body', LIMITS.body);
  const templateId = identifier(o, 'template_id', LIMITS.id, false, true);
  const params = stringMap(o, 'template_params');
  if (templateId === null) {
    if (title === null) throw new FieldError('title', 'give title and body, or template_id');
    if (body === null) throw new FieldError('body', 'give title and body, or template_id');
    if (Object.keys(params).length > 0) throw new FieldError('template_params', 'only with template_id');
  } else if (title !== null || body !== null) throw new FieldError('template_id', 'give either template_id or title/body, not both');
  return {
    sender: ctx.sender,
    app_id: identifier(o, 'app_id', MAX_LENGTH.appId, true, true)!,
    category: symbol(o, 'category', CATEGORY_SYMBOLS, category),
    priority: symbol(o, 'priority', PRIORITY_SYMBOLS, priority),
    title,
    body,
    template_id: templateId,
    template_params: params,
    data: stringMap(o, 'data'),
    collapse_key: identifier(o, 'collapse_key', LIMITS.id, false, true),
    expire_at: expireAt(o, ctx.now),
  };
}

function object(body: unknown, allowed: ReadonlySet<string>): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new FieldError('body', 'expected a JSON object');
  const o = body as Record<string, unknown>;
  if ('sender' in o) throw new FieldError('sender', 'is set by the API key, not by the request');
  for (const field of Object.keys(o)) if (!allowed.has(field)) throw new FieldError(field, 'unknown field');
  return o;
}

function identifier(o: Record<string, unknown>, field: string, max: number, required: boolean, strict: boolean): string | null {
  const v = o[field];
  if (v === undefined || v === null) {
    if (required) throw new FieldError(field, 'is required');
    return null;
  }
  if (typeof v !== 'string') throw new FieldError(field, 'expected a string');
  const broken = id(field, v, max);
  if (broken) throw new FieldError(field, broken);
  if (strict && !ID_CHARS.test(v)) throw new FieldError(field, 'expected only [A-Za-z0-9._:-]');
  return v;
}

function optionalText(o: Record<string, unknown>, field: string, max: number): string | null {
  const v = o[field];
  if (v === undefined || v === null || v === '') return null;
  if (typeof v !== 'string') throw new FieldError(field, 'expected a string');
  const broken = text(field, v, max);
  if (broken) throw new FieldError(field, broken);
  return v;
}

function symbol<T extends string>(o: Record<string, unknown>, field: string, values: readonly T[], fallback: T): T {
  const v = o[field];
  if (v === undefined || v === null) return fallback;
  const upper = typeof v === 'string' ? v.toUpperCase() : '';
  if (!(values as readonly string[]).includes(upper)) throw new FieldError(field, `expected one of ${values.map((s) => s.toLowerCase()).join(', ')}`);
  return upper as T;
}

function stringMap(o: Record<string, unknown>, field: string): Record<string, string> {
  const v = o[field];
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw new FieldError(field, 'expected an object of string values');
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length > LIMITS.mapEntries) throw new FieldError(field, `has ${entries.length} entries (max ${LIMITS.mapEntries})`);
  for (const [k, value] of entries) {
    const at = `${field}.${k.slice(0, LIMITS.mapKey)}`;
    if (k === '' || k.length > LIMITS.mapKey) throw new FieldError(at, `keys must have 1–${LIMITS.mapKey} characters`);
    if (typeof value !== 'string') throw new FieldError(at, 'expected a string');
    if (value.length > LIMITS.mapValue) throw new FieldError(at, `has ${value.length} characters (max ${LIMITS.mapValue})`);
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

/** An ISO-8601 date and time, its zone `Z`, `±hh:mm`, `±hhmm`, `±hh` or none. */
const ISO_TIME = /^(?<date>\d{4}-\d\d-\d\d)T(?<time>\d\d:\d\d(?::\d\d(?:[.,]\d{1,9})?)?)(?<zone>Z|(?<sign>[+-])(?<hours>\d\d)(?::?(?<minutes>\d\d))?)?$/i;
const EXPIRE_AT = 'expected epoch ms or an ISO-8601 time with a zone';

/**
 * Epoch ms of an ISO-8601 time with a zone. A time without one is refused rather than read in some
 * zone: the sender's and the entry's local times need not be the same.
 */
function isoTime(v: string): number {
  const m = ISO_TIME.exec(v)?.groups;
  if (!m) throw new FieldError('expire_at', EXPIRE_AT);
  if (m.zone === undefined) throw new FieldError('expire_at', 'an ISO-8601 time needs a zone: Z or an offset such as +08:00');
  const wall = Date.parse(`${m.date}T${m.time!.replace(',', '.')}Z`);
  const offsetMinutes = Number(m.hours ?? 0) * 60 + Number(m.minutes ?? 0);
  // Date.parse rolls 2030-02-30 over to March 2: a date, time or offset that does not exist is refused.
  if (
    Number.isNaN(wall) ||
    !new Date(wall).toISOString().startsWith(`${m.date}T${m.time!.slice(0, 8)}`) ||
    Number(m.hours ?? 0) > 23 ||
    Number(m.minutes ?? 0) > 59
  )
    throw new FieldError('expire_at', `${EXPIRE_AT}: no such date, time or offset`);
  return wall - (m.sign === '-' ? -offsetMinutes : offsetMinutes) * 60_000;
}

/** An integer epoch ms or an ISO-8601 time with a zone, after now. */
function expireAt(o: Record<string, unknown>, now: number): number | null {
  const v = o.expire_at;
  if (v === undefined || v === null) return null;
  const ms = typeof v === 'string' ? isoTime(v) : v;
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms <= 0) throw new FieldError('expire_at', EXPIRE_AT);
  if (ms <= now) throw new FieldError('expire_at', 'is not in the future');
  return ms;
}

function idempotencyKey(o: Record<string, unknown>, ctx: ParseContext): string {
  const fromBody = identifier(o, 'idempotency_key', LIMITS.id, false, true);
  const header = ctx.idempotencyHeader;
  if (header !== undefined) {
    if (header === '' || header.length > LIMITS.id || !ID_CHARS.test(header))
      throw new FieldError('Idempotency-Key', `expected 1–${LIMITS.id} of [A-Za-z0-9._:-]`);
    if (fromBody !== null && fromBody !== header) throw new FieldError('idempotency_key', 'differs from the Idempotency-Key header');
    return header;
  }
  return fromBody ?? ctx.newId();
}
