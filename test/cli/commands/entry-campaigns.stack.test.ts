/**
 * `pushctl entry` and `pushctl campaigns` as an operator runs them, on the real stack: a key is
 * printed once and listed without its secret, a revoked key stops working, the served entry
 * accepts a request with a key made by the command, and an operator's cancel reaches push.campaigns.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { PushCampaignRecord } from '../../../processors/campaigns/records.ts';
import { pushctl } from '../pushctl-process.ts';
import { readAll, startEntryStack, type EntryStack } from '../../entry/support.ts';

let stack: EntryStack;
let env: Record<string, string>;

before(async () => {
  stack = await startEntryStack();
  env = {
    PUSH_MYSQL_URL: stack.mysqlUrl,
    PUSH_CLICKHOUSE_DATABASE: stack.clickhouseDatabase,
    PUSH_TOPIC_PREFIX: stack.topics.prefix,
    PUSH_ENTRY_PORT: '0',
    PUSH_LOG_LEVEL: 'warn',
  };
});

after(async () => {
  await stack?.cleanup();
});

test('keys add prints the key once; list shows no secret; revoke stops it; a bad business is named', async () => {
  const added = await pushctl(['entry', 'keys', 'add', 'cli-biz', '--rate', '7'], env);
  assert.equal(added.code, 0, added.stderr);
  const key = /pk_[0-9a-f]{16}\.[A-Za-z0-9_-]{43}/.exec(added.stdout)?.[0];
  assert.ok(key, added.stdout);
  const keyId = key.slice(3, 19);
  const found = await stack.keys.authenticate(key);
  assert.deepEqual([found?.business, found?.requestsPerSecond], ['cli-biz', 7]);

  const listed = await pushctl(['entry', 'keys', 'list'], env);
  assert.equal(listed.code, 0, listed.stderr);
  assert.match(listed.stdout, new RegExp(`${keyId}\\s+cli-biz\\s+7\\s`));
  assert.ok(!listed.stdout.includes(key.split('.')[1]!), 'the secret is never listed');

  const revoked = await pushctl(['entry', 'keys', 'revoke', keyId], env);
  assert.equal(revoked.code, 0, revoked.stderr);
  assert.equal(await stack.keys.authenticate(key), undefined);

  const bad = await pushctl(['entry', 'keys', 'add', 'bad business'], env);
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /business: expected 1–64 of \[A-Za-z0-9._-\]/);
});

test('pushctl entry serves the API until SIGTERM, with a key made by pushctl', async () => {
  const added = await pushctl(['entry', 'keys', 'add', 'served-biz'], env);
  const key = /pk_\S+/.exec(added.stdout)![0];
  const child = spawn(process.execPath, ['--import', 'tsx', 'cli/pushctl.ts', 'entry'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        const m = /entry on (http:\/\/\S+)/.exec(out);
        if (m) resolve(m[1]!);
      });
      child.once('exit', (code) => reject(new Error(`pushctl entry exited with ${code}`)));
    });
    const res = await fetch(`${url}/v1/pushes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ uid: 'u-cli', app_id: 'im.demo', title: 'Hi', body: 'hello' }),
    });
    assert.equal(res.status, 202);
    assert.equal((await fetch(`${url}/health`)).status, 200);
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
  const requests = await readAll<{ sender: string; uid: string }>(stack, 'requests');
  assert.deepEqual(
    requests.filter((r) => r.value.sender === 'served-biz').map((r) => r.key),
    ['u-cli'],
  );
});

test('pushctl campaigns: show of an unknown campaign fails; cancel puts a CANCEL for the named sender in push.campaigns', async () => {
  const shown = await pushctl(['campaigns', 'show', 'c_unknown'], env);
  assert.equal(shown.code, 1);
  assert.match(shown.stderr, /no campaign c_unknown/);
  const unnamed = await pushctl(['campaigns', 'cancel', 'c_unknown'], env);
  assert.notEqual(unnamed.code, 0);
  assert.match(unnamed.stderr, /--sender: campaign c_unknown is not known yet/);
  const cancelled = await pushctl(['campaigns', 'cancel', 'c_unknown', '--sender', 'cli-biz'], env);
  assert.equal(cancelled.code, 0, cancelled.stderr);
  const records = await readAll<PushCampaignRecord>(stack, 'campaigns');
  assert.deepEqual(
    records.map((r) => [r.key, r.value.action, r.value.sender]),
    [['c_unknown', 'CANCEL', 'cli-biz']],
  );
});
