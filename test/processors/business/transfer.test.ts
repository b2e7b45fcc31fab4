/**
 * The transfer step and the lane's quota: a request is rendered from its template, a malformed one
 * goes to push.dlq naming the broken rule (and nothing else of it is lost or sent), and the
 * business lane spends at most its share of a vendor's daily quota, leaving the rest to IM.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configurationErrors } from '../../../cli/config-check.ts';
import { BusinessHarness, briefOutcome } from './harness.ts';

const NOON = Date.UTC(2026, 0, 15, 12, 0);
const templates = { order_shipped: { title: 'Order {order}', body: '{item} is on its way' } };

describe('business transfer', () => {
  test('a template request is rendered with its parameters; the dispatch carries sender, category and campaign', async () => {
    const h = BusinessHarness.create(NOON, { templates });
    await h.device('u1');
    await h.request('u1', 'k', {
      title: null,
      body: null,
      template_id: 'order_shipped',
      template_params: { order: '77', item: 'The lamp' },
      campaign_id: 'c-1',
    });
    const [d] = h.dispatches();
    assert.deepEqual([d?.title, d?.body], ['Order 77', 'The lamp is on its way']);
    assert.deepEqual(d?.business, { sender: 'order-service', category: 'NOTICE', campaign_id: 'c-1', expire_at: null });
    assert.equal(d?.channels[0]?.token, 'fcm-token-u1-phone');
    await h.close();
  });

  test('malformed requests go to the DLQ naming the rule; the next valid request of the user is sent', async () => {
    const h = BusinessHarness.create(NOON, { templates });
    await h.device('u1');
    await h.request('u1', 'k1', { title: null, body: null });
    await h.request('u1', 'k2', { title: null, body: null, template_id: 'nope' });
    await h.request('u1', 'k3', { title: null, body: null, template_id: 'order_shipped', template_params: { order: '1' } });
    await h.request('u1', 'k4', { sender: '' });
    await h.request('u1', 'k5', {}, 'someone-else');
    await h.request('u1', 'k6', { requested_at: NOON + 86_400_000 });
    await h.request('u1', 'k7');
    assert.deepEqual(
      h.dlq().map((m) => /rule ([a-z_]+)/.exec(m)?.[1]),
      ['content', 'unknown_template', 'template_params', 'non_empty', 'key_is_uid', 'future_skew'],
    );
    assert.match(h.dlq().join('\n'), /^$/, 'read once');
    assert.equal(h.dispatches().length, 1);
    assert.deepEqual(h.outcomes(), []);
    await h.close();
  });

  test('the business lane spends at most its share of a vendor quota (30 % of 20 a day split over 1 partition: 6)', async () => {
    const h = BusinessHarness.create(NOON, { quotas: { fcm: { '*': 20 } }, quotaSharePercent: 30 });
    for (let i = 0; i < 8; i++) {
      await h.device(`u${i}`);
      await h.request(`u${i}`, 'k');
    }
    assert.equal(h.dispatches().length, 6);
    assert.deepEqual(h.outcomes().map(briefOutcome), ['u6 DROPPED quota', 'u7 DROPPED quota']);
    await h.close();
  });

  test('each dispatch carries its category’s vendor class: a campaign is marketing, a notice or reminder a service message', async () => {
    const h = BusinessHarness.create(NOON);
    await h.device('u1', 'phone', 'hms');
    await h.device('u2', 'phone', 'vivo');
    await h.device('u3', 'phone', 'oppo');
    await h.request('u1', 'sale', { category: 'CAMPAIGN', campaign_id: 'c-1' });
    await h.request('u1', 'notice', { category: 'NOTICE' });
    await h.request('u2', 'sale', { category: 'CAMPAIGN', campaign_id: 'c-1' });
    await h.request('u2', 'due', { category: 'REMINDER' });
    await h.request('u3', 'sale', { category: 'CAMPAIGN', campaign_id: 'c-1' });
    assert.deepEqual(
      h.dispatches().map((d) => [d.uid, d.business?.category, d.channels[0]?.vendor, d.channels[0]?.classification]),
      [
        ['u1', 'CAMPAIGN', 'hms', { category: 'MARKETING' }],
        ['u1', 'NOTICE', 'hms', { category: 'ACCOUNT' }],
        ['u2', 'CAMPAIGN', 'vivo', { classification: '0', category: 'MARKETING' }],
        ['u2', 'REMINDER', 'vivo', { classification: '1', category: 'TODO' }],
        ['u3', 'CAMPAIGN', 'oppo', { category: 'MARKETING', notify_level: '1', channel: 'marketing' }],
      ],
    );
    await h.close();
  });

  test('no valid token: dropped with no_token; a request for one device goes only to that device', async () => {
    const h = BusinessHarness.create(NOON);
    await h.request('u0', 'k');
    await h.device('u1', 'phone');
    await h.device('u1', 'tablet', 'hms');
    await h.request('u1', 'all');
    await h.request('u1', 'one', { device_id: 'tablet' });
    assert.deepEqual(h.outcomes().map(briefOutcome), ['u0 DROPPED no_token']);
    assert.deepEqual(
      h.dispatches().map((d) => `${d.device_id} ${d.channels[0]?.vendor}`),
      ['phone fcm', 'tablet hms', 'tablet hms'],
    );
    await h.close();
  });
});

describe('business cancellation', () => {
  test('requests of a cancelled campaign, new or kept for the sender rate, end SUPPRESSED campaign_cancelled; other campaigns go on', async () => {
    const cancelled = new Set<string>();
    const h = BusinessHarness.create(NOON, { cancelled: (id) => cancelled.has(id), overrides: { bulk: { senderRatePerSecond: 1 } } });
    for (const uid of ['u1', 'u2', 'u3']) {
      await h.device(uid);
      await h.request(uid, 'k', { sender: 'bulk', category: 'CAMPAIGN', campaign_id: 'c-1' });
    }
    await h.request('u1', 'other', { category: 'CAMPAIGN', campaign_id: 'c-2' });
    assert.deepEqual(
      h.dispatches().map((d) => `${d.uid} ${d.business?.campaign_id}`),
      ['u1 c-1', 'u1 c-2'],
    );
    cancelled.add('c-1');
    await h.request('u4', 'k', { sender: 'bulk', category: 'CAMPAIGN', campaign_id: 'c-1' });
    await h.advanceTo(NOON + 5_000, 100);
    assert.deepEqual(h.dispatches(), []);
    assert.deepEqual(h.outcomes().map(briefOutcome).sort(), [
      'u2 SUPPRESSED campaign_cancelled',
      'u3 SUPPRESSED campaign_cancelled',
      'u4 SUPPRESSED campaign_cancelled',
    ]);
    await h.close();
  });
});

describe('business configuration', () => {
  test('a bad strategies file, an unreadable templates file and an unknown default zone are reported at once, each naming its key', () => {
    const dir = mkdtempSync(join(tmpdir(), 'business-config-'));
    const strategies = join(dir, 'strategies.json');
    writeFileSync(strategies, JSON.stringify({ overrides: { marketing: { categories: { CAMPAIGN: { night: 'sometimes' } } } } }));
    const errors = configurationErrors({
      PUSH_BUSINESS_STRATEGIES: strategies,
      PUSH_BUSINESS_TEMPLATES: join(dir, 'missing.json'),
      PUSH_BUSINESS_DEFAULT_TIME_ZONE: 'Mars/Olympus',
    });
    const messages = errors.map((e) => `${e.key}: ${e.message}`).join('\n');
    assert.match(messages, /PUSH_BUSINESS_STRATEGIES \(overrides\.marketing\).*CAMPAIGN\.night/);
    assert.match(messages, /PUSH_BUSINESS_TEMPLATES: .*missing\.json/);
    assert.match(messages, /PUSH_BUSINESS_DEFAULT_TIME_ZONE: .*Mars\/Olympus/);
    assert.equal(errors.length, 3);
    assert.deepEqual(configurationErrors({}), [], 'the defaults are valid');
  });
});
