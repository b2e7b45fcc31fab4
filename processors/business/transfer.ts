/**
 * The transfer step of the business path (docs/entry.md): checks a push.requests record against
 * its contract and converts it to the internal form the strategies and the dispatch use (text
 * rendered from its template). A request that breaks a rule is a ContractError, which the runtime
 * routes to push.dlq with the rule in its reason headers (`push request breaks rule <rule>: ...`);
 * the details name fields and numbers, never the text or data of the request.
 */
import { createHash } from 'node:crypto';
import { ContractError } from '../../common/errors.ts';
import { eventTime, id, MAX_LENGTH, text, type IngestRules } from '../model/ingest.ts';
import type { PushCategory, PushRequestRecord } from '../campaigns/records.ts';
import { CATEGORIES, type Template } from './options.ts';

/** Bounds of what a business push carries (vendors cut further: docs/vendors.md, "Payload limits"). */
export const BUSINESS_LIMITS = { title: 256, body: 2_048, key: 128, dataEntries: 32, dataBytes: 2_048 } as const;

/** A request after the transfer: what the strategies decide on and the dispatch carries. */
export interface BusinessPush {
  /** Deterministic id of (uid, sender, idempotency key): the dispatch's msg_id, the base of its task ids. */
  readonly requestId: string;
  readonly uid: string;
  readonly sender: string;
  readonly appId: string;
  readonly idempotencyKey: string;
  readonly category: PushCategory;
  readonly priority: string;
  readonly title: string;
  readonly body: string;
  readonly data: Readonly<Record<string, string>>;
  readonly deviceId: string | null;
  readonly collapseKey: string | null;
  readonly expireAt: number | null;
  readonly campaignId: string | null;
  readonly requestedAt: number;
}

/**
 * The request id of (uid, sender, idempotency key): 32 hex characters. A sender's key is scoped to
 * the recipient (requests are partitioned by uid, so that is where a duplicate can be told). The
 * HTTP entry answers it as `request_id`; support finds the push's task rows by it (docs/entry.md).
 */
export function requestId(uid: string, sender: string, idempotencyKey: string): string {
  return createHash('sha256').update(`request\u001f${uid}\u001f${sender}\u001f${idempotencyKey}`).digest('hex').slice(0, 32);
}

const PLACEHOLDER = /\{([A-Za-z0-9_.-]+)\}/g;

/** Fills `{name}` placeholders; undefined names the first parameter missing. */
function fill(template: string, params: Readonly<Record<string, string>>): { text: string } | { missing: string } {
  let missing: string | undefined;
  const out = template.replace(PLACEHOLDER, (whole, name: string) => {
    const value = params[name];
    if (value === undefined) missing ??= name;
    return value ?? whole;
  });
  return missing === undefined ? { text: out } : { missing };
}

function broken(rule: string): never {
  throw new ContractError('CONTRACT_VIOLATION', `push request breaks rule ${rule}`);
}

/** The rendered title and body: the request's own, or its template's with the parameters. */
function render(r: PushRequestRecord, templates: Readonly<Record<string, Template>>): { title: string; body: string } {
  if (r.template_id === null) {
    if (!r.title || !r.body) broken('content: title and body are required when template_id is null');
    return { title: r.title, body: r.body };
  }
  const template = templates[r.template_id];
  if (!template) broken(`unknown_template: template_id has no template (${r.template_id.length} characters)`);
  const title = fill(template.title, r.template_params);
  const body = fill(template.body, r.template_params);
  if ('missing' in title) broken(`template_params: parameter ${JSON.stringify(title.missing)} of the template is missing`);
  if ('missing' in body) broken(`template_params: parameter ${JSON.stringify(body.missing)} of the template is missing`);
  return { title: title.text, body: body.text };
}

/**
 * Checks `r` (the value of a record keyed `key`) and converts it. Throws a ContractError naming the
 * broken rule and field.
 */
export function transfer(
  r: PushRequestRecord,
  key: string | null,
  now: number,
  rules: IngestRules,
  templates: Readonly<Record<string, Template>>,
): BusinessPush {
  const problem =
    id('uid', r.uid, MAX_LENGTH.uid) ??
    (key !== r.uid ? 'key_is_uid: the record key is not the uid' : undefined) ??
    id('sender', r.sender, MAX_LENGTH.appId) ??
    id('app_id', r.app_id, MAX_LENGTH.appId) ??
    id('idempotency_key', r.idempotency_key, BUSINESS_LIMITS.key) ??
    (CATEGORIES.includes(r.category) ? undefined : `category: unknown category`) ??
    (r.device_id === null ? undefined : id('device_id', r.device_id, MAX_LENGTH.deviceId)) ??
    text('collapse_key', r.collapse_key, BUSINESS_LIMITS.key) ??
    (r.campaign_id === null ? undefined : id('campaign_id', r.campaign_id, BUSINESS_LIMITS.key)) ??
    text('title', r.title, BUSINESS_LIMITS.title) ??
    text('body', r.body, BUSINESS_LIMITS.body) ??
    eventTime('requested_at', r.requested_at, now, rules) ??
    (r.expire_at === null || (Number.isSafeInteger(r.expire_at) && r.expire_at > 0) ? undefined : `epoch_ms: expire_at must be a positive integer epoch ms`) ??
    dataProblem(r.data);
  if (problem) broken(problem);
  const { title, body } = render(r, templates);
  const rendered = text('title', title, BUSINESS_LIMITS.title) ?? text('body', body, BUSINESS_LIMITS.body);
  if (rendered) broken(`${rendered} (rendered from the template)`);
  return {
    requestId: requestId(r.uid, r.sender, r.idempotency_key),
    uid: r.uid,
    sender: r.sender,
    appId: r.app_id,
    idempotencyKey: r.idempotency_key,
    category: r.category,
    priority: r.priority,
    title,
    body,
    data: { ...r.data },
    deviceId: r.device_id,
    collapseKey: r.collapse_key,
    expireAt: r.expire_at,
    campaignId: r.campaign_id,
    requestedAt: r.requested_at,
  };
}

function dataProblem(data: Readonly<Record<string, string>>): string | undefined {
  const entries = Object.entries(data);
  if (entries.length > BUSINESS_LIMITS.dataEntries) return `max_length: data has ${entries.length} entries (max ${BUSINESS_LIMITS.dataEntries})`;
  const bytes = entries.reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0);
  return bytes > BUSINESS_LIMITS.dataBytes ? `max_length: data has ${bytes} bytes (max ${BUSINESS_LIMITS.dataBytes})` : undefined;
}
