/** One token hash (processors/model/ids.ts) for every record and store, with the online-filter's older state still honoured. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { tokenHash } from '../../../processors/model/ids.ts';
import { applyTokenReport, type UserDevices } from '../../../processors/online-filter/devices.ts';
import type { TokenReport } from '../../../processors/model/records.ts';

const report = (token: string, state: TokenReport['state']): TokenReport => ({
  uid: 'u1',
  device_id: 'd1',
  platform: 'android',
  vendor: 'hms',
  app_id: 'im',
  token,
  reported_at: 1,
  state,
  source: 'CLIENT',
  reason: null,
  manufacturer: null,
});

test('the token hash is the first 32 hex characters of the SHA-256 that push.outcomes and the receipt join already hold', () => {
  assert.equal(tokenHash('tok-1'), createHash('sha256').update('tok-1').digest('hex').slice(0, 32));
});

test('the online-filter stores the token hash; a 16-character entry from older state still matches its token', () => {
  const devices: UserDevices = {};
  assert.equal(applyTokenReport(devices, report('tok-1', 'VALID')), true);
  assert.equal(devices.d1?.im?.hms, tokenHash('tok-1'));

  const legacy = (): UserDevices => ({ d1: { im: { hms: tokenHash('tok-1').slice(0, 16) } } });
  const stale = legacy();
  assert.equal(applyTokenReport(stale, report('tok-2', 'INVALID')), false, 'an invalidation of another token keeps the device');
  assert.deepEqual(stale, legacy());
  const invalidated = legacy();
  assert.equal(applyTokenReport(invalidated, report('tok-1', 'INVALID')), true, 'the invalidation of the held token removes it');
  assert.deepEqual(invalidated, {});
  const refreshed = legacy();
  assert.equal(applyTokenReport(refreshed, report('tok-1', 'VALID')), true);
  assert.equal(refreshed.d1?.im?.hms, tokenHash('tok-1'), 'a VALID report rewrites the entry at full length');
});
