/**
 * The tables pushctl prints, as a user reads them, from the stack's real ClickHouse and MySQL:
 * `pushctl arrival --by vendor` ends with a total row of distinct (task, device) pairs, and
 * `pushctl tokens show` starts with a header line.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import mysql from 'mysql2/promise';
import { createTestDatabase, type TestDatabase } from '../../sinks/clickhouse/support.ts';
import { stackEndpoints, uniqueName } from '../../support/stack.ts';
import { pushctl } from '../pushctl-process.ts';

let db: TestDatabase;

before(async () => {
  db = await createTestDatabase('cli_tables');
});

after(async () => {
  await db?.drop();
});

test('pushctl arrival --by vendor has a total row counting each (task, device) pair once', async () => {
  const now = Math.floor(Date.now() / 1000) - 60;
  let n = 0;
  const event = (task: string, device: string, vendor: string, kind: string, source = 'outcome') => ({
    event_id: `e${n++}`,
    event_time: now,
    event_ms: now * 1000,
    kind,
    source,
    stage: 'fan-out',
    task_id: task,
    uid: 'u',
    device_id: device,
    app_id: 'app-tables',
    vendor,
  });
  await db.client.insert({
    table: 'push_events',
    format: 'JSONEachRow',
    values: [
      // t1/d1 fell back: HMS failed, then FCM accepted. One pair, in both vendors' rows.
      event('t1', 'd1', 'hms', 'failed'),
      event('t1', 'd1', 'fcm', 'accepted'),
      event('t2', 'd2', 'apns', 'accepted'),
      event('t3', 'd3', 'xiaomi', 'accepted'),
      event('t3', 'd3', 'xiaomi', 'delivered', 'receipt'),
    ],
  });
  const result = await pushctl(['arrival', '--since', '1h', '--by', 'vendor'], { PUSH_CLICKHOUSE_DATABASE: db.connection.database });
  assert.equal(result.code, 0, result.stderr);
  const lines = result.stdout.split('\n');
  assert.match(lines[1]!, /^vendor\s+submitted\s+arrived\s+arrival\s+delivered\s+delivered%\s+unknown\s+unknown%$/);
  assert.match(result.stdout, /^hms\s+1\s+0\s+0\.00%/m);
  assert.match(result.stdout, /^fcm\s+1\s+1\s+100\.00%/m);
  // Four vendor rows, three pairs: 3 submitted, 3 arrived, 1 delivered (xiaomi's receipt), 2 with no receipt.
  assert.match(result.stdout, /^total\s+3\s+3\s+100\.00%\s+1\s+33\.33%\s+2\s+66\.67%$/m);
  assert.match(result.stdout, /each \(task, device\) pair once/);
});

test('pushctl tokens show prints a header line above the tokens, each only as a fingerprint', async () => {
  const uid = uniqueName('cli-tokens');
  const token = `secret-token-${uid}`;
  const conn = await mysql.createConnection({ uri: stackEndpoints().mysqlUrl });
  try {
    await conn.query(
      'INSERT INTO im_push_token (uid, device_id, vendor, platform, app_id, token, status, reported_at, refreshed_at) VALUES (?, ?, ?, ?, ?, ?, 1, NOW(3), NOW(3))',
      [uid, `${uid}-d0`, 'fcm', 'android', 'app-tables', token],
    );
    const result = await pushctl(['tokens', 'show', uid]);
    assert.equal(result.code, 0, result.stderr);
    const [header, row] = result.stdout.split('\n');
    assert.match(header!, /^device\s+vendor\s+platform\s+app\s+token \(fingerprint\)\s+state\s+failures\s+refreshed \(UTC\)$/);
    assert.match(row!, new RegExp(`^${uid}-d0\\s+fcm\\s+android\\s+app-tables\\s+[0-9a-f]{10}…\\(${token.length}\\)\\s+valid\\s+0\\s+\\d{4}-`));
    assert.ok(!result.stdout.includes(token), 'the token itself is never printed');
  } finally {
    await conn.query('DELETE FROM im_push_token WHERE uid = ?', [uid]);
    await conn.end();
  }
});
