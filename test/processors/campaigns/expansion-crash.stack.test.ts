/**
 * A worker SIGKILLed in the middle of a campaign's expansion, twice, and the
 * campaign still reaches push.requests exactly once per uid — read with a read_committed consumer,
 * no uid twice, none skipped — and the progress row ends at the campaign's size.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RowDataPacket } from 'mysql2/promise';
import type { PushRequestRecord } from '../../../processors/campaigns/records.ts';
import { uniqueName } from '../../support/stack.ts';
import { call, readAll, startEntryStack, type EntryStack } from '../../entry/support.ts';

const WORKER = fileURLToPath(new URL('./campaigns-worker.ts', import.meta.url));
const UIDS = Array.from({ length: 20_000 }, (_, i) => `crash-u-${i}`);

let stack: EntryStack;
const children: ChildProcess[] = [];

before(async () => {
  stack = await startEntryStack();
});

after(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await stack?.cleanup();
});

function startWorker(appId: string): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER], {
    env: { ...process.env, WORKER_PREFIX: stack.topics.prefix, WORKER_MYSQL_URL: stack.mysqlUrl, WORKER_RATE: '3000', WORKER_APP_ID: appId },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  return child;
}

async function expanded(id: string): Promise<{ expanded: number; state: string }> {
  const [rows] = await stack.pool.query<RowDataPacket[]>('SELECT expanded, state FROM push_campaign WHERE campaign_id = ?', [id]);
  return { expanded: Number(rows[0]?.expanded ?? 0), state: String(rows[0]?.state ?? 'unknown') };
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function kill(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

test('SIGKILL twice in the middle of a campaign expansion: every uid exactly once in push.requests (read_committed)', async () => {
  const { key } = await stack.keys.create('crash-sender');
  const answer = await call(stack, 'POST', '/v1/campaigns', key, { app_id: 'im.demo', title: 'Sale', body: 'Today only', uids: UIDS });
  assert.equal(answer.status, 202, JSON.stringify(answer.body));
  const id = answer.body.campaign_id as string;
  const appId = uniqueName('campaigns-crash');

  const killedAt: number[] = [];
  for (const threshold of [3_000, 9_000]) {
    const worker = startWorker(appId);
    await waitFor(`expansion past ${threshold}`, async () => (await expanded(id)).expanded >= threshold, 90_000);
    await kill(worker);
    killedAt.push((await expanded(id)).expanded);
  }
  assert.ok(
    killedAt.every((n) => n > 0 && n < UIDS.length),
    `both kills hit the middle of the expansion (${killedAt.join(', ')} of ${UIDS.length})`,
  );

  const last = startWorker(appId);
  await waitFor('the expansion to finish', async () => (await expanded(id)).state === 'done', 120_000);
  const final = await expanded(id);
  assert.equal(final.expanded, UIDS.length);

  const records = (await readAll<PushRequestRecord>(stack, 'requests')).filter((r) => r.value.campaign_id === id);
  const counts = new Map<string, number>();
  for (const r of records) counts.set(r.key, (counts.get(r.key) ?? 0) + 1);
  const twice = [...counts].filter(([, n]) => n > 1).map(([uid]) => uid);
  const missing = UIDS.filter((uid) => !counts.has(uid));
  assert.deepEqual({ twice: twice.slice(0, 5), missing: missing.slice(0, 5) }, { twice: [], missing: [] }, `${twice.length} twice, ${missing.length} missing`);
  assert.equal(records.length, UIDS.length);
  for (const r of records) assert.equal(r.value.idempotency_key, `${id}:${r.key}`);
  await kill(last);
});
