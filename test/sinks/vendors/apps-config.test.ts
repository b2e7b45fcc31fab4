import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { ConfigError } from '../../../common/errors.ts';
import { loadAppsConfig, parseAppsConfig } from '../../../sinks/vendors/apps-config.ts';
import type { ApnsTokenConfig } from '../../../sinks/vendors/apns/index.ts';

const apns = { teamId: 'T', keyId: 'K', privateKey: 'PEM', topic: 'com.x' };

function configError(raw: unknown): ConfigError {
  try {
    parseAppsConfig(raw);
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error;
  }
  assert.fail('expected a ConfigError');
}

describe('apps configuration', () => {
  test('defaults are filled and the result is frozen', () => {
    const config = parseAppsConfig({ apps: [{ appId: 'a', vendors: { apns } }] });
    const a = config.apps[0]!.vendors.apns as ApnsTokenConfig;
    assert.equal(a.environment, 'production');
    assert.equal(a.pushType, 'alert');
    assert.equal(a.connections, 2);
    assert.equal(a.tokenRefreshMinutes, 50);
    assert.ok(Object.isFrozen(a));
  });

  test('errors name the field', () => {
    assert.equal(
      configError({
        apps: [
          { appId: 'a', vendors: { apns } },
          { appId: 'b', vendors: { apns: { ...apns, keyId: '' } } },
        ],
      }).key,
      'apps[1].vendors.apns.keyId',
    );
    assert.equal(configError({ apps: [{ appId: 'a', vendors: { apns: { ...apns, connections: 0 } } }] }).key, 'apps[0].vendors.apns.connections');
    assert.equal(
      configError({ apps: [{ appId: 'a', vendors: { apns: { ...apns, tokenRefreshMinutes: 10 } } }] }).key,
      'apps[0].vendors.apns.tokenRefreshMinutes',
    );
    assert.equal(configError({ apps: [{ appId: 'a', vendors: { blackberry: {} } }] }).key, 'apps[0].vendors.blackberry');
    assert.equal(
      configError({
        apps: [
          { appId: 'a', vendors: { apns } },
          { appId: 'a', vendors: { apns } },
        ],
      }).key,
      'apps[1].appId',
    );
    assert.equal(
      configError({ apps: [{ appId: 'a', vendors: { fcm: { serviceAccount: { project_id: 'p', private_key: 'k' } } } }] }).key,
      'apps[0].vendors.fcm.serviceAccount.client_email',
    );
    assert.equal(
      configError({ apps: [{ appId: 'a', vendors: { xiaomi: { appSecret: 's', packageName: 'p', channelId: 'c', baseUrl: 'ftp://x' } } }] }).key,
      'apps[0].vendors.xiaomi.baseUrl',
    );
    assert.equal(configError({ apps: [] }).key, 'apps');
  });

  test('secrets are read from files relative to the config file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'apps-config-'));
    writeFileSync(join(dir, 'key.p8'), 'PEM-FROM-FILE');
    writeFileSync(join(dir, 'sa.json'), JSON.stringify({ project_id: 'p', private_key: 'k', client_email: 'e@x' }));
    writeFileSync(
      join(dir, 'apps.json'),
      JSON.stringify({
        apps: [{ appId: 'a', vendors: { apns: { ...apns, privateKey: undefined, privateKeyFile: 'key.p8' }, fcm: { serviceAccountFile: 'sa.json' } } }],
      }),
    );
    const config = loadAppsConfig(join(dir, 'apps.json'));
    assert.equal((config.apps[0]!.vendors.apns as ApnsTokenConfig).privateKey, 'PEM-FROM-FILE');
    assert.equal(config.apps[0]!.vendors.fcm!.serviceAccount.token_uri, 'https://oauth2.googleapis.com/token');
    writeFileSync(
      join(dir, 'bad.json'),
      JSON.stringify({ apps: [{ appId: 'a', vendors: { apns: { ...apns, privateKey: undefined, privateKeyFile: 'missing.p8' } } }] }),
    );
    assert.throws(
      () => loadAppsConfig(join(dir, 'bad.json')),
      (e: ConfigError) => e.key === 'apps[0].vendors.apns.privateKeyFile',
    );
  });

  test('the example file validates once its secret files exist', () => {
    const dir = mkdtempSync(join(tmpdir(), 'apps-example-'));
    const example = readFileSync(new URL('../../../config/apps.example.json', import.meta.url), 'utf8');
    writeFileSync(join(dir, 'apps.json'), example);
    assert.throws(
      () => loadAppsConfig(join(dir, 'apps.json')),
      (e: ConfigError) => e.key === 'apps[0].vendors.apns.privateKeyFile',
    );
    mkdirSync(join(dir, 'secrets'));
    for (const f of ['AuthKey_KEY1234567.p8', 'hms-im-main.secret', 'xiaomi-im-main.secret', 'oppo-im-main.secret', 'vivo-im-main.secret'])
      writeFileSync(join(dir, 'secrets', f), 'secret');
    writeFileSync(
      join(dir, 'secrets', 'firebase-im-main.json'),
      JSON.stringify({ project_id: 'p', private_key: 'k', client_email: 'e@x', token_uri: 'https://oauth2.googleapis.com/token' }),
    );
    const config = loadAppsConfig(join(dir, 'apps.json'));
    assert.deepEqual(
      config.apps.map((a) => [a.appId, Object.keys(a.vendors)]),
      [
        ['im-main', ['apns', 'fcm', 'hms', 'xiaomi', 'oppo', 'vivo']],
        ['im-lite', ['apns']],
      ],
    );
    assert.equal(config.apps[1]!.vendors.apns!.environment, 'sandbox');
  });
});
