/** The HTTP entry's request validation (entry/validate.ts) and per-key rate limits (entry/rate.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FieldError, campaignIdFor, campaignIdOf, parseCampaignBody, parsePushBody, transferCheck } from '../../entry/validate.ts';
import { compileIngestRules } from '../../processors/model/ingest.ts';
import { KeyRateLimits } from '../../entry/rate.ts';

const ctx = { sender: 'order-service', now: 1_764_400_000_000, newId: () => 'generated-1' };

function fieldOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof FieldError) return `${error.field}: ${error.message}`;
    throw error;
  }
  return 'accepted';
}

test('a valid push becomes a push.requests record; the sender is the key, defaults filled', () => {
  const r = parsePushBody({ uid: 'u-1', app_id: 'im.demo', title: 'Shipped', body: 'Order 77 is on its way', data: { order: '77' }, priority: 'high' }, ctx);
  assert.deepEqual(r, {
    uid: 'u-1',
    sender: 'order-service',
    app_id: 'im.demo',
    category: 'NOTICE',
    priority: 'HIGH',
    title: 'Shipped',
    body: 'Order 77 is on its way',
    template_id: null,
    template_params: {},
    data: { order: '77' },
    collapse_key: null,
    expire_at: null,
    idempotency_key: 'generated-1',
    device_id: null,
    campaign_id: null,
    requested_at: ctx.now,
  });
  const t = parsePushBody(
    { uid: 'u-1', app_id: 'im.demo', category: 'reminder', template_id: 'order_shipped', template_params: { order: '77' }, expire_at: '2026-12-01T00:00:00Z' },
    { ...ctx, idempotencyHeader: 'order-77:shipped' },
  );
  assert.equal(t.idempotency_key, 'order-77:shipped');
  assert.equal(t.expire_at, Date.parse('2026-12-01T00:00:00Z'));
  assert.equal(t.category, 'REMINDER');
});

test('each mistake is answered naming its field', () => {
  const base = { uid: 'u-1', app_id: 'im.demo', title: 'x', body: 'y' };
  const cases: Array<[unknown, string]> = [
    ['not an object', 'body: expected a JSON object'],
    [{ ...base, uid: undefined }, 'uid: is required'],
    [{ ...base, uid: 'u'.repeat(65) }, 'uid: max_length: uid has 65 characters (max 64)'],
    [{ ...base, app_id: 'bad app' }, 'app_id: expected only [A-Za-z0-9._:-]'],
    [{ ...base, sender: 'someone' }, 'sender: is set by the API key, not by the request'],
    [{ ...base, tilte: 'typo' }, 'tilte: unknown field'],
    [{ uid: 'u-1', app_id: 'im.demo' }, 'title: give title and body, or template_id'],
    [{ uid: 'u-1', app_id: 'im.demo', title: 'x' }, 'body: give title and body, or template_id'],
    [{ ...base, template_id: 't' }, 'template_id: give either template_id or title/body, not both'],
    [{ ...base, template_params: { a: 'b' } }, 'template_params: only with template_id'],
    [{ ...base, category: 'spam' }, 'category: expected one of notice, reminder, campaign'],
    [{ ...base, priority: 1 }, 'priority: expected one of high, normal, low'],
    [{ ...base, data: { n: 1 } }, 'data.n: expected a string'],
    [{ ...base, data: [] }, 'data: expected an object of string values'],
    [{ ...base, expire_at: ctx.now - 1 }, 'expire_at: is not in the future'],
    [{ ...base, expire_at: 'tomorrow' }, 'expire_at: expected epoch ms or an ISO-8601 time with a zone'],
    [{ ...base, title: 'x'.repeat(257) }, 'title: max_length: title has 257 characters (max 256)'],
    [{ ...base, device_id: 5 }, 'device_id: expected a string'],
  ];
  for (const [body, expected] of cases)
    assert.equal(
      fieldOf(() => parsePushBody(body, ctx)),
      expected,
      JSON.stringify(body),
    );
  assert.equal(
    fieldOf(() => parsePushBody({ ...base, idempotency_key: 'a' }, { ...ctx, idempotencyHeader: 'b' })),
    'idempotency_key: differs from the Idempotency-Key header',
  );
  assert.equal(
    fieldOf(() => parsePushBody(base, { ...ctx, idempotencyHeader: 'has space' })),
    'Idempotency-Key: expected 1–64 of [A-Za-z0-9._:-]',
  );
});

test('expire_at: epoch ms, or an ISO-8601 time with a zone (Z or an offset); a time without a zone, or one that does not exist, is refused naming the field', () => {
  const base = { uid: 'u-1', app_id: 'im.demo', title: 'x', body: 'y' };
  const midnight = Date.UTC(2030, 0, 1); // 2030-01-01T00:00:00Z
  const read = (expire_at: unknown) => {
    let ms: number | null = null;
    const answer = fieldOf(() => (ms = parsePushBody({ ...base, expire_at }, ctx).expire_at));
    return answer === 'accepted' ? ms : answer;
  };
  const cases: Array<[unknown, number | string]> = [
    [midnight, midnight],
    ['2030-01-01T00:00:00Z', midnight],
    ['2030-01-01T00:00:00.250Z', midnight + 250],
    ['2030-01-01T08:00:00+08:00', midnight],
    ['2030-01-01T08:00+0800', midnight],
    ['2029-12-31T19:00:00-05:00', midnight],
    ['2030-01-01T00:00:00', 'expire_at: an ISO-8601 time needs a zone: Z or an offset such as +08:00'],
    ['2030-01-01T00:00', 'expire_at: an ISO-8601 time needs a zone: Z or an offset such as +08:00'],
    ['2030-02-30T00:00:00Z', 'expire_at: expected epoch ms or an ISO-8601 time with a zone: no such date, time or offset'],
    ['2030-01-01T24:00:00Z', 'expire_at: expected epoch ms or an ISO-8601 time with a zone: no such date, time or offset'],
    ['2030-01-01T00:00:00+25:00', 'expire_at: expected epoch ms or an ISO-8601 time with a zone: no such date, time or offset'],
    ['2030-01-01', 'expire_at: expected epoch ms or an ISO-8601 time with a zone'],
    ['2030-01-01T00:00:00Z trailing', 'expire_at: expected epoch ms or an ISO-8601 time with a zone'],
    [1.5, 'expire_at: expected epoch ms or an ISO-8601 time with a zone'],
  ];
  for (const [value, expected] of cases) assert.equal(read(value), expected, JSON.stringify(value));
});

test("the business transfer's own checks are answered 400 by the entry, naming the field (not dead-lettered later)", () => {
  const check = transferCheck({ order_shipped: { title: 'Order {order}', body: 'Order {order} shipped' } }, compileIngestRules());
  const checked = { ...ctx, check };
  const push = { uid: 'u-1', app_id: 'im.demo' };
  assert.equal(
    fieldOf(() => parsePushBody({ ...push, template_id: 'order_shipped', template_params: { order: '7' } }, checked)),
    'accepted',
  );
  assert.equal(
    fieldOf(() => parsePushBody({ ...push, template_id: 'nope' }, checked)),
    'template_id: unknown_template: template_id has no template (4 characters)',
  );
  assert.match(
    fieldOf(() => parsePushBody({ ...push, template_id: 'order_shipped' }, checked)),
    /^template_params: template_params: parameter "order"/,
  );
  assert.match(
    fieldOf(() => parsePushBody({ ...push, title: 't', body: 'b', data: { k: 'v'.repeat(1_000), l: 'w'.repeat(1_000), m: 'x'.repeat(100) } }, checked)),
    /^data: max_length: data has \d+ bytes/,
  );
  assert.match(
    fieldOf(() => parseCampaignBody({ app_id: 'im.demo', template_id: 'order_shipped', uids: ['u-1'] }, checked, 10)),
    /^template_params: /,
    'a campaign is checked as its requests will be',
  );
});

test('a campaign: distinct uids, an id derived from sender and idempotency key, limits named', () => {
  const c = parseCampaignBody({ app_id: 'im.demo', title: 'Sale', body: 'Today', uids: ['u-1', 'u-2', 'u-1'], idempotency_key: 'spring' }, ctx, 10);
  assert.deepEqual(c.uids, ['u-1', 'u-2']);
  assert.equal(c.campaign_id, campaignIdFor('order-service', 'spring'));
  assert.match(c.campaign_id, /^c_[0-9a-f]{32}$/);
  assert.notEqual(campaignIdFor('other-sender', 'spring'), c.campaign_id, 'two senders with the same key get two campaigns');
  assert.equal(c.action, 'CREATE');
  assert.equal(c.category, 'CAMPAIGN');
  assert.equal(c.priority, 'LOW');
  assert.equal(
    fieldOf(() => parseCampaignBody({ app_id: 'im.demo', title: 'S', body: 'B', uids: [] }, ctx, 10)),
    'uids: expected a non-empty array of uids',
  );
  assert.equal(
    fieldOf(() => parseCampaignBody({ app_id: 'im.demo', title: 'S', body: 'B', uids: ['a', 7] }, ctx, 10)),
    'uids[1]: expected a string',
  );
  assert.equal(
    fieldOf(() => parseCampaignBody({ app_id: 'im.demo', title: 'S', body: 'B', uids: ['a', 'b', 'c'] }, ctx, 2)),
    'uids: 3 distinct uids (max 2 per campaign, PUSH_CAMPAIGN_MAX_UIDS)',
  );
  assert.equal(
    fieldOf(() => parseCampaignBody({ app_id: 'im.demo', title: 'S', body: 'B', uids: ['a'], uid: 'x' }, ctx, 2)),
    'uid: unknown field',
  );
  assert.equal(campaignIdOf('c_0123'), 'c_0123');
  assert.equal(
    fieldOf(() => campaignIdOf('%E0%A4%A')),
    'campaign_id: not a valid URL path segment',
  );
  assert.equal(
    fieldOf(() => campaignIdOf('a b')),
    'campaign_id: expected 1–64 of [A-Za-z0-9._:-]',
  );
});

test('per-key token bucket: a second of burst, then 429 with the seconds to wait; keys are independent', () => {
  let now = 0;
  const rates = new KeyRateLimits(10, () => now);
  for (let i = 0; i < 5; i++) assert.equal(rates.take('k1', 5), 0);
  assert.equal(rates.take('k1', 5), 1, 'over the rate: retry after 1 s');
  assert.equal(rates.take('k2', 5), 0, 'another key has its own bucket');
  now += 200; // one token back at 5/s
  assert.equal(rates.take('k1', 5), 0);
  assert.equal(rates.take('k1', 5), 1);
  assert.equal(rates.take('slow', 1), 0);
  assert.equal(rates.take('slow', 1), 1);
});
