import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { VendorRegistry } from '../../../sinks/vendors/registry.ts';
import type { PushMessage, Vendor } from '../../../processors/fan-out/vendor-port.ts';
import { vendorCharCount, type ReceivedPush, type VendorJson } from '../../../emulators/common.ts';
import type { StartedEmulators } from '../../../emulators/index.ts';
import { message, useEmulators } from './support.ts';
import { assertWholeGraphemes, HARD_GRAPHEMES, textOf } from './texts.ts';

/**
 * Vendor payloads: titles and bodies of 1–5,000 characters in ASCII, CJK and
 * emoji (ZWJ sequences, flags, combining marks) are accepted by each vendor's emulator, never
 * split a grapheme and stay within the vendor's documented limits (docs/vendors.md).
 */
const SCRIPTS: Record<string, readonly string[]> = {
  ascii: [...'abcdefghijklmnopqrstuvwxyz ', 'The ', 'quick '].flatMap((s) => [...s]),
  cjk: [...'你好世界消息中文字测试漢字한국어日本語'],
  emoji: HARD_GRAPHEMES.filter((g) => g !== 'A' && g !== '中'),
  mixed: [...HARD_GRAPHEMES, ...'ab 你好'],
};
const LENGTHS = [1, 2, 10, 20, 39, 40, 41, 49, 50, 51, 99, 100, 101, 127, 128, 129, 500, 1000, 4000, 5000];
/** Texts this short are far within the byte limits of APNs, FCM and HMS and must arrive unchanged. */
const ALWAYS_WHOLE = 10;

interface Case {
  readonly m: PushMessage;
  readonly label: string;
  readonly length: number;
}

const count = vendorCharCount;
const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

/** The title and body limits of the Chinese vendors, as documented (docs/vendors.md, "Payload limits"). */
const FITS: Partial<Record<Vendor, { title(t: string): boolean; body(t: string): boolean }>> = {
  xiaomi: { title: (t) => count.oneEach(t) < 50, body: (t) => count.oneEach(t) < 128 },
  oppo: { title: (t) => count.oneEach(t) <= 50, body: (t) => count.oneEach(t) <= 50 /* standard style */ },
  vivo: { title: (t) => count.chineseTwo(t) <= 40, body: (t) => count.chineseTwo(t) <= 100 },
};

/** Each vendor's documented limits, checked on what the emulator received. */
const WITHIN_LIMITS: Record<Vendor, (got: ReceivedPush) => void> = {
  apns: (got) => {
    // The emulator answers 413 above 4096 bytes; the alert alone must be within them too.
    assert.ok(bytes({ aps: { alert: { title: got.title, body: got.body } } }) <= 4096);
  },
  fcm: (got) => {
    const m = got.request as VendorJson;
    assert.ok(bytes({ notification: m.notification, data: m.data }) <= 4096, 'FCM: notification + data within 4096 bytes');
  },
  hms: (got) => {
    const { token: _tokens, ...withoutTokens } = got.request as VendorJson;
    assert.ok(bytes({ validate_only: false, message: withoutTokens }) <= 4096, 'HMS: body without tokens within 4096 bytes');
  },
  xiaomi: (got) => assertFits('xiaomi', got),
  oppo: (got) => assertFits('oppo', got),
  vivo: (got) => assertFits('vivo', got),
};

function assertFits(vendor: Vendor, got: ReceivedPush): void {
  assert.ok(FITS[vendor]!.title(got.title!), `${vendor} title over the limit: ${got.title}`);
  assert.ok(FITS[vendor]!.body(got.body!), `${vendor} body over the limit: ${got.body}`);
}

const VENDORS = Object.keys(WITHIN_LIMITS) as Vendor[];

describe('payload limits: every vendor takes long and hard texts, cut by grapheme clusters', () => {
  let em: StartedEmulators;
  let registry: VendorRegistry;
  useEmulators((env) => ({ em, registry } = env));

  function cases(vendor: Vendor): Case[] {
    return Object.entries(SCRIPTS).flatMap(([script, pool], s) =>
      LENGTHS.map((length, l) => {
        const seed = `${script}-${length}`;
        const label = `${vendor} ${script} ${length}`;
        return {
          label,
          length,
          m: message(em, vendor, seed, {
            title: textOf(pool, length, 2 * (s * 100 + l) + 1),
            body: textOf(pool, length, 2 * (s * 100 + l) + 2),
            collapseId: `conv-${vendor}-${seed}`,
          }),
        };
      }),
    );
  }

  for (const vendor of VENDORS) {
    test(`${vendor}: 1–5,000 characters of ASCII, CJK and emoji are accepted, whole graphemes, within the limits`, async () => {
      const all = cases(vendor);
      const adapter = registry.adapter(vendor, 'app-1')!;
      const outcomes = await adapter.submit(all.map((c) => c.m));
      all.forEach((c, i) => assert.equal(outcomes[i]!.kind, 'accepted', `${c.label}: ${JSON.stringify(outcomes[i])}`));
      const byToken = new Map(em[vendor].accepted().map((r) => [r.token, r]));
      for (const c of all) {
        const got = byToken.get(c.m.token);
        assert.ok(got, `${c.label}: the emulator recorded the push`);
        assertWholeGraphemes(c.m.title, got.title!);
        assertWholeGraphemes(c.m.body, got.body!);
        assert.notEqual(got.title, '', `${c.label}: a title is left`);
        assert.notEqual(got.body, '', `${c.label}: a body is left`);
        WITHIN_LIMITS[vendor](got);
        // A text within the vendor's limit arrives whole (for the byte-counted vendors: a short one).
        const fits = FITS[vendor] ?? { title: () => c.length <= ALWAYS_WHOLE, body: () => c.length <= ALWAYS_WHOLE };
        if (fits.title(c.m.title)) assert.equal(got.title, c.m.title, `${c.label}: a title within the limit arrives whole`);
        if (fits.body(c.m.body)) assert.equal(got.body, c.m.body, `${c.label}: a body within the limit arrives whole`);
      }
    });
  }

  test('vivo: a 100-character summary with an emoji is cut, not refused', async () => {
    const m = message(em, 'vivo', 'summary-emoji', { body: `${'a'.repeat(99)}😀` });
    assert.deepEqual(
      (await registry.adapter('vivo', 'app-1')!.submit([m])).map((o) => o.kind),
      ['accepted'],
    );
    const got = em.vivo.accepted().find((r) => r.token === m.token)!;
    // The ellipsis is not ASCII, so it counts two: 98 letters and the ellipsis make 100.
    assert.equal(got.body, `${'a'.repeat(98)}…`);
  });

  test("emulators refuse texts over the documented limits with the vendors' codes", async () => {
    // Sent as the vendors receive them, bypassing the builders' cuts.
    const long = 'x'.repeat(5000);
    const xiaomi = await postXiaomi(em, { title: long });
    assert.equal(xiaomi.code, 65009);
    const vivoTitle = '你'.repeat(21);
    assert.equal(count.chineseTwo(vivoTitle), 42);
    assert.equal((await postVivo(em, { title: vivoTitle })).result, 10055);
    assert.equal((await postOppo(em, { title: '😀'.repeat(26) })).code, 41, 'OPPO: 26 emoji count 52 by the stricter rule');
  });
});

/** Posts one MiPush form as the adapter would, with `override` fields, and returns the answer. */
async function postXiaomi(em: StartedEmulators, override: Record<string, string>): Promise<VendorJson> {
  const c = em.appsConfig.apps[0]!.vendors.xiaomi!;
  const form = new URLSearchParams({
    registration_id: 'xiaomi-raw',
    restricted_package_name: c.packageName,
    pass_through: '0',
    title: 't',
    description: 'd',
    payload: '{}',
    'extra.channel_id': c.channelId,
    ...override,
  });
  return caFetch(
    em,
    `${em.baseUrls.xiaomi}/v3/message/regid`,
    { authorization: `key=${c.appSecret}`, 'content-type': 'application/x-www-form-urlencoded' },
    form.toString(),
  );
}

async function postVivo(em: StartedEmulators, override: Record<string, unknown>): Promise<VendorJson> {
  const c = em.appsConfig.apps[0]!.vendors.vivo!;
  const { createHash } = await import('node:crypto');
  const timestamp = em.clock.now();
  const sign = createHash('md5')
    .update(c.appId + c.appKey + timestamp + c.appSecret)
    .digest('hex');
  const auth = await caFetch(
    em,
    `${em.baseUrls.vivo}/message/auth`,
    { 'content-type': 'application/json' },
    JSON.stringify({ appId: c.appId, appKey: c.appKey, timestamp, sign }),
  );
  const body = {
    appId: Number(c.appId),
    regId: 'vivo-raw',
    notifyType: 4,
    title: 't',
    content: 'c',
    timeToLive: 3600,
    skipType: 1,
    classification: 1,
    category: 'IM',
    requestId: 'raw-1',
    ...override,
  };
  return caFetch(em, `${em.baseUrls.vivo}/message/send`, { 'content-type': 'application/json', authToken: String(auth.authToken) }, JSON.stringify(body));
}

async function postOppo(em: StartedEmulators, override: Record<string, unknown>): Promise<VendorJson> {
  const c = em.appsConfig.apps[0]!.vendors.oppo!;
  const { createHash } = await import('node:crypto');
  const timestamp = String(em.clock.now());
  const sign = createHash('sha256')
    .update(c.appKey + timestamp + c.masterSecret)
    .digest('hex');
  const form = (f: Record<string, string>) => new URLSearchParams(f).toString();
  const headers = { 'content-type': 'application/x-www-form-urlencoded' };
  const auth = await caFetch(em, `${em.baseUrls.oppo}/server/v1/auth`, headers, form({ app_key: c.appKey, timestamp, sign }));
  const notification = { title: 't', content: 'c', channel_id: c.channelId, category: 'IM', notify_level: 2, ...override };
  return caFetch(
    em,
    `${em.baseUrls.oppo}/server/v1/message/notification/unicast`,
    headers,
    form({ auth_token: String(auth.data.auth_token), message: JSON.stringify({ target_type: 2, target_value: 'oppo-raw', notification }) }),
  );
}

/** A POST trusting only the emulators' test CA. */
async function caFetch(em: StartedEmulators, url: string, headers: Record<string, string>, body: string): Promise<VendorJson> {
  const { Agent, request } = await import('undici');
  const dispatcher = new Agent({ connect: { ca: em.ca } });
  try {
    const answer = await request(url, { method: 'POST', headers, body, dispatcher });
    return (await answer.body.json()) as VendorJson;
  } finally {
    await dispatcher.close();
  }
}
