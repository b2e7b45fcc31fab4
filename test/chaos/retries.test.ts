import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkStorms, type StormWindow } from '../../chaos/retries.ts';
import type { ReceivedPush } from '../../emulators/common.ts';

const storm: StormWindow = { vendor: 'oppo', fault: 'server-error ×10', fromMs: 0, toMs: 1000 };

function request(at: number, client: string, answer: string, token = 'tok-1'): ReceivedPush {
  return { vendor: 'oppo', appId: 'app', token, request: {}, data: { conv_id: 'c1', seq: 7 }, answer, at, client };
}

test('a hot retry loop is the same client sending a refused push again sooner than a backoff allows', () => {
  const [check] = checkStorms([request(100, 'worker-a', '-1'), request(110, 'worker-a', 'accepted')], [storm], new Set());
  assert.equal(check!.tooEarly, 1);
  assert.equal(check!.minRetryGapMs, 10);
  assert.deepEqual(check!.examples, [{ answer: '-1', gapMs: 10, nextAnswer: 'accepted' }]);
});

test('another worker sending the same push after a takeover is not a retry of the refused request', () => {
  const received = [request(100, 'worker-a', '-1'), request(107, 'worker-b', 'accepted'), request(1200, 'worker-a', 'accepted')];
  const [check] = checkStorms(received, [storm], new Set());
  assert.equal(check!.tooEarly, 0);
  assert.equal(check!.minRetryGapMs, 1100, "worker-a's own retry came 1.1 s after its refusal");
  assert.equal(check!.maxRequestsPerPush, 2, 'requests inside the storm window, every client');
});

test("a retry sooner than the vendor's Retry-After is too early; a dead token's refusal is the device's, not the storm's", () => {
  const withRetryAfter = { ...storm, retryAfterMs: 1000 };
  const received = [
    request(100, 'worker-a', '-2'),
    request(900, 'worker-a', 'accepted'),
    request(200, 'worker-a', '-2', 'dead'),
    request(210, 'worker-a', '-2', 'dead'),
  ];
  const [check] = checkStorms(received, [withRetryAfter], new Set(['dead']));
  assert.equal(check!.refused, 1);
  assert.equal(check!.tooEarly, 1, '800 ms after a refusal that asked for 1 s');
});
