/**
 * The chaos report's takeover figures (chaos/takeover.ts) from vendor recordings and the task rows
 * as a killed worker left them: what was sent again after the kill, what had no recorded answer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkTakeovers, type Kill, type TaskRowAtKill } from '../../chaos/takeover.ts';
import type { Scenario } from '../../chaos/scenario.ts';
import type { ReceivedPush } from '../../emulators/common.ts';
import { taskId } from '../../processors/model/ids.ts';

const KILLED = 101;
const NEXT = 202;
const KILL_AT = 1000;

/** One device per push, each with a HMS and an FCM token; hms token `dead` is a dead one. */
const pushes = ['answered', 'in-flight', 'in-transit', 'recorded-again', 'retry', 'dead'] as const;
const scenario = {
  devices: pushes.map((p) => ({ uid: `u-${p}`, deviceId: `d-${p}`, tokens: [{ vendor: 'hms', token: `hms-${p}` }] })),
  deadTokens: [{ vendor: 'hms', token: 'hms-dead' }],
} as unknown as Scenario;

function call(push: (typeof pushes)[number], at: number, pid: number, answer = 'accepted'): ReceivedPush {
  return {
    vendor: 'hms',
    appId: 'app',
    token: `hms-${push}`,
    request: {},
    data: { conv_id: `c-${push}`, seq: '1' },
    answer,
    at,
    client: `offline-push (pid ${pid})`,
  };
}
const row = (push: (typeof pushes)[number], value: TaskRowAtKill): [string, TaskRowAtKill] => [taskId(`u-${push}`, `c-${push}`, 1, `d-${push}`), value];

test('re-sends after a takeover are counted against the calls without a recorded answer at the kill', () => {
  const received = [
    call('answered', 500, KILLED), // accepted, row final: not called again
    call('in-flight', 1200, KILLED), // answered after the kill: no answer at it
    call('in-flight', 3000, NEXT),
    call('in-transit', 990, KILLED), // answered just before the kill, the row still pending
    call('in-transit', 3000, NEXT),
    call('recorded-again', 400, KILLED), // final on its row, yet called again: what must never happen
    call('recorded-again', 3000, NEXT),
    call('retry', 600, KILLED, 'SERVER_ERROR'), // a 5xx: the next call is the retry it asked for
    call('retry', 3000, NEXT),
    call('dead', 700, KILLED, '80300007'), // a dead token recorded in the pending row's trail
  ];
  const rows = new Map([
    row('answered', { status: 1, trail: null }),
    row('in-flight', { status: 0, trail: null }),
    row('in-transit', { status: 0, trail: null }),
    row('recorded-again', { status: 1, trail: null }),
    row('retry', { status: 0, trail: null }),
    row('dead', { status: 0, trail: '[{"channel":0,"status":"DEAD_TOKEN","vendor":"hms"}]' }),
  ]);
  const kills: Kill[] = [{ pid: KILLED, atMs: KILL_AT, rows }];
  assert.deepEqual(checkTakeovers(received, kills, scenario), {
    kills: 1,
    resent: 3,
    withoutRecordedAnswer: 2,
    answeredByVendorUnrecorded: 1,
    resentAlthoughRecorded: 1,
    examples: ['hms|hms-recorded-again|c-recorded-again|1'],
    byKill: [{ resent: 3, withoutRecordedAnswer: 2 }],
  });
});
