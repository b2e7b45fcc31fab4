/**
 * A campaign's pushes are identical apart from the token (processors/business/dispatch.ts
 * `businessCollapseId`, processors/fan-out/records.ts `pushMessage`), so each batch vendor's adapter
 * sends the pushes of one submit call as one multi-token request; pushes that are not a
 * campaign's go one request each. Against the vendor emulators, counting their send requests.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { businessDispatch } from '../../../processors/business/dispatch.ts';
import type { BusinessPush } from '../../../processors/business/transfer.ts';
import { CAMPAIGN_TTL_STEP_MS, campaignTtl, pushMessage } from '../../../processors/fan-out/records.ts';
import type { PushMessage, SubmitOutcome } from '../../../processors/fan-out/vendor-port.ts';
import type { StartedEmulators } from '../../../emulators/index.ts';
import type { VendorRegistry } from '../../../sinks/vendors/registry.ts';
import { useEmulators } from './support.ts';
import { VENDOR_CHANNELS } from '../../../sinks/vendors/channels.ts';

const NOW = Date.UTC(2026, 11, 1, 12, 0, 3);
type BatchVendor = 'hms' | 'xiaomi' | 'vivo' | 'oppo';

function push(uid: string, campaignId: string | null, extra: Partial<BusinessPush> = {}): BusinessPush {
  return {
    requestId: `req-${uid}-${campaignId ?? 'single'}`,
    uid,
    sender: 'autumn',
    appId: 'app-1',
    idempotencyKey: `${campaignId ?? 'single'}:${uid}`,
    category: campaignId === null ? 'NOTICE' : 'CAMPAIGN',
    priority: 'LOW',
    title: 'Autumn sale',
    body: 'Everything half price today',
    data: {},
    deviceId: null,
    collapseKey: null,
    expireAt: NOW + 3_600_000,
    campaignId,
    requestedAt: NOW - 1000,
    ...extra,
  };
}

/** The vendor message of `p` to `uid`'s phone on `vendor`, built as the business lane's fan-out builds it. */
function messageOf(em: StartedEmulators, vendor: BatchVendor, p: BusinessPush, now = NOW): PushMessage {
  const token = em.token(vendor, p.uid);
  const d = businessDispatch(p, 'phone', 'android', [{ vendor, token, classification: {} }], 'IMMEDIATE', now);
  return pushMessage(d, token, undefined, 86_400, now);
}

describe('campaign payloads on the batch vendors', () => {
  let em: StartedEmulators;
  let registry: VendorRegistry;
  useEmulators((env) => ({ em, registry } = env));

  const submit = async (vendor: BatchVendor, messages: PushMessage[]): Promise<{ outcomes: SubmitOutcome[]; requests: number }> => {
    const before = em[vendor].sendRequests;
    const outcomes = await registry.adapter(vendor, 'app-1')!.submit(messages);
    return { outcomes, requests: em[vendor].sendRequests - before };
  };

  test('a campaign to three users is one request per batch vendor (two on vivo: saveListPayload + pushToList)', async () => {
    const expected: Record<BatchVendor, number> = { hms: 1, xiaomi: 1, vivo: 2, oppo: 1 };
    for (const vendor of ['hms', 'xiaomi', 'vivo', 'oppo'] as const) {
      // Built a few seconds apart, within one TTL step, as the pushes meeting in one submit call are.
      const messages = ['u1', 'u2', 'u3'].map((uid, i) => messageOf(em, vendor, push(uid, 'autumn-sale'), NOW + i * 1000));
      const { outcomes, requests } = await submit(vendor, messages);
      assert.deepEqual(
        outcomes.map((o) => o.kind),
        ['accepted', 'accepted', 'accepted'],
        vendor,
      );
      assert.equal(requests, expected[vendor], `${vendor} send requests`);
      const got = em[vendor].accepted();
      assert.equal(new Set(got.map((r) => String(r.collapseId))).size, 1, `${vendor}: one collapse id`);
      assert.ok(
        got.every((r) => !JSON.stringify(r.data ?? '').includes('u1')),
        `${vendor}: the custom data names no user`,
      );
    }
  });

  test('pushes that are not a campaign stay one request each: their collapse id and data are the request’s', async () => {
    for (const vendor of ['hms', 'xiaomi', 'vivo'] as const) {
      const messages = ['u1', 'u2', 'u3'].map((uid) => messageOf(em, vendor, push(uid, null)));
      const { outcomes, requests } = await submit(vendor, messages);
      assert.ok(
        outcomes.every((o) => o.kind === 'accepted'),
        vendor,
      );
      assert.equal(requests, 3, `${vendor} send requests`);
    }
  });

  test('a dead token in a campaign batch: only its push is dead-token, the others in the same request are accepted', async () => {
    for (const vendor of ['hms', 'vivo'] as const) {
      em[vendor].deadTokens.add(em.token(vendor, 'u2'));
      const messages = ['u1', 'u2', 'u3'].map((uid) => messageOf(em, vendor, push(uid, 'autumn-sale')));
      const { outcomes, requests } = await submit(vendor, messages);
      assert.deepEqual(
        outcomes.map((o) => o.kind),
        ['accepted', 'dead-token', 'accepted'],
        vendor,
      );
      assert.equal(requests, vendor === 'vivo' ? 2 : 1, `${vendor} send requests`);
    }
  });

  test('a business push’s own data reaches every vendor beside the push’s keys, which a sender’s key cannot replace', async () => {
    const data = { deep_link: 'shop://orders/42', order_id: '42', conv_id: 'sender-tried-this' };
    for (const vendor of ['apns', 'fcm', 'hms', 'xiaomi', 'oppo', 'vivo'] as const) {
      const single = push('u1', null, { data });
      const campaign = push('u2', 'autumn-sale', { data });
      const token = (uid: string) => em.token(vendor, uid);
      const dispatch = (p: BusinessPush) => businessDispatch(p, 'phone', 'android', [{ vendor, token: token(p.uid), classification: {} }], 'IMMEDIATE', NOW);
      const outcomes = await registry.adapter(vendor, 'app-1')!.submit([pushMessage(dispatch(single), token('u1'), undefined, 86_400, NOW)]);
      const more = await registry.adapter(vendor, 'app-1')!.submit([pushMessage(dispatch(campaign), token('u2'), undefined, 86_400, NOW)]);
      assert.deepEqual(
        [...outcomes, ...more].map((o) => o.kind),
        ['accepted', 'accepted'],
        vendor,
      );
      const got = (uid: string) => em[vendor].accepted().find((r) => r.token === token(uid))?.data as Record<string, unknown> | undefined;
      assert.deepEqual(
        { deep_link: got('u1')?.deep_link, order_id: got('u1')?.order_id, conv_id: got('u1')?.conv_id },
        { deep_link: 'shop://orders/42', order_id: '42', conv_id: `biz:${single.requestId}` },
        `${vendor}: a single push`,
      );
      assert.deepEqual(
        { deep_link: got('u2')?.deep_link, campaign_id: got('u2')?.campaign_id, sender: got('u2')?.sender },
        { deep_link: 'shop://orders/42', campaign_id: 'autumn-sale', sender: 'autumn' },
        `${vendor}: a campaign's push`,
      );
    }
  });

  test('a campaign goes in each vendor’s marketing class and channel, a notice in its service class; every emulator accepts both', async () => {
    /** The class fields of what the emulator received, as each vendor's request names them. */
    const classOf = (vendor: BatchVendor, request: unknown): Record<string, unknown> => {
      const r = request as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- a vendor's recorded request, read field by field
      if (vendor === 'hms') return { category: r.android?.category };
      if (vendor === 'xiaomi') return { channel: r['extra.channel_id'] };
      if (vendor === 'oppo') return { category: r.notification?.category, level: r.notification?.notify_level, channel: r.notification?.channel_id };
      return { classification: r.classification, category: r.category };
    };
    const expected: Record<BatchVendor, Record<'CAMPAIGN' | 'NOTICE', Record<string, unknown>>> = {
      hms: { CAMPAIGN: { category: 'MARKETING' }, NOTICE: { category: 'ACCOUNT' } },
      xiaomi: { CAMPAIGN: { channel: 'marketing' }, NOTICE: { channel: 'im_private' } },
      oppo: { CAMPAIGN: { category: 'MARKETING', level: 1, channel: 'marketing' }, NOTICE: { category: 'ACCOUNT', level: 2, channel: 'im_message' } },
      vivo: { CAMPAIGN: { classification: 0, category: 'MARKETING' }, NOTICE: { classification: 1, category: 'ACCOUNT' } },
    };
    for (const vendor of ['hms', 'xiaomi', 'oppo', 'vivo'] as const) {
      for (const p of [push('u1', 'autumn-sale'), push('u2', null)]) {
        const token = em.token(vendor, p.uid);
        const channel = { vendor, token, classification: VENDOR_CHANNELS.businessClassification(vendor, p.category) };
        const d = businessDispatch(p, 'phone', 'android', [channel], 'IMMEDIATE', NOW);
        const [outcome] = await registry.adapter(vendor, 'app-1')!.submit([pushMessage(d, token, channel.classification, 86_400, NOW)]);
        assert.equal(outcome?.kind, 'accepted', `${vendor} ${p.category}: ${JSON.stringify(outcome)}`);
        const got = em[vendor].accepted().find((r) => r.token === token);
        assert.deepEqual(classOf(vendor, got?.request), expected[vendor][p.category as 'CAMPAIGN' | 'NOTICE'], `${vendor} ${p.category}`);
      }
    }
  });

  test('a campaign collapse key is the sender’s: the same for every user, apart from the campaign id', () => {
    const collapse = (p: BusinessPush) => businessDispatch(p, 'phone', 'android', [], 'IMMEDIATE', NOW).collapse_id;
    assert.equal(collapse(push('u1', 'autumn-sale')), collapse(push('u2', 'autumn-sale')));
    assert.notEqual(collapse(push('u1', 'autumn-sale')), collapse(push('u1', 'winter-sale')));
    assert.equal(collapse(push('u1', 'autumn-sale', { collapseKey: 'sale' })), collapse(push('u2', 'winter-sale', { collapseKey: 'sale' })));
    assert.notEqual(collapse(push('u1', null)), collapse(push('u2', null)), 'a single push stands alone');
  });

  test('a campaign TTL is one per 10 s step and never reaches past the expiry', () => {
    const expireAt = NOW + 600_000;
    const stepStart = Math.floor(NOW / CAMPAIGN_TTL_STEP_MS) * CAMPAIGN_TTL_STEP_MS;
    const within = [stepStart + 1, stepStart + 4_321, stepStart + CAMPAIGN_TTL_STEP_MS].map((now) => campaignTtl(expireAt, 86_400, now));
    assert.equal(new Set(within).size, 1, `one TTL within the step (${within.join(', ')})`);
    for (let now = NOW; now < expireAt; now += 7_777) {
      const ttl = campaignTtl(expireAt, 86_400, now);
      assert.ok(ttl * 1000 <= Math.max(1000, expireAt - now), `TTL ${ttl} s at ${expireAt - now} ms before the expiry`);
      assert.ok(ttl * 1000 >= expireAt - now - CAMPAIGN_TTL_STEP_MS - 1000, `TTL ${ttl} s not much shorter than ${expireAt - now} ms`);
    }
    assert.equal(campaignTtl(expireAt, 300, NOW), 300, 'never longer than the configured TTL');
  });
});
