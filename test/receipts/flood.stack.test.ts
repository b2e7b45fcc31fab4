import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { kafkaClient } from '../../common/kafka-client.ts';
import { topicName } from '../../pipeline/topics.ts';
import { hmsCallbackHeader } from '../../sinks/vendors/hms/receipts.ts';
import { freePort } from '../../demo/ports.ts';
import { stackEndpoints, uniqueName } from '../support/stack.ts';
import { createTestMysql, type TestMysql } from '../support/test-mysql.ts';
import { openRaw, postHead, rawRequest, readRaw, type RawAnswer } from './raw-http.ts';
import { PARSING_APPS, RECEIPT_SECRETS, TEST_APP, receiptAppsFile, receiptBodies } from './support.ts';
import { createTopicsWithLeaders } from '../../topology/create-topics.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const PUSHCTL = fileURLToPath(new URL('../../cli/pushctl.ts', import.meta.url));
const WRONG_KEY_CONNECTIONS = 1_000;
const STALLED_BODIES = 200;
const GENUINE_DURING_FLOOD = 100;
/** The bound: the receiver's RSS stays within 50 MB of idle. */
const RSS_HEADROOM_KB = 50_000;

/** Resident set size of a process, kB, from /proc/<pid>/status. */
function rssKb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? NaN);
}

/**
 * `pushctl receiver` in a child process under a flood: 1,000 connections with wrong keys (each
 * declaring and sending a 1 MiB body) and 200 authenticated callbacks whose bodies
 * stall, while genuine receipts keep arriving. The receiver's RSS stays within 50 MB of idle and
 * every genuine receipt is accepted. Loopback only; the flood comes from other 127.0.0.x
 * addresses, as other clients would.
 */
describe('receipt receiver under a flood', { timeout: 180_000 }, () => {
  const endpoints = stackEndpoints();
  const prefix = `${uniqueName('rcv-flood')}.`;
  const topic = topicName('receiptsRaw', prefix);
  const kafka = kafkaClient(endpoints, { clientId: 'receiver-flood-test' });
  let mysql: TestMysql;
  let child: ChildProcess;
  let output = '';
  let port: number;
  let metricsPort: number;

  before(async () => {
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsWithLeaders(admin, [{ topic, numPartitions: 1, replicationFactor: 1 }]);
    await admin.disconnect();
    mysql = await createTestMysql('flood');
    const dir = tmpdir();
    const receiptConfig = join(dir, `${uniqueName('flood-receipts')}.json`);
    const appsConfig = join(dir, `${uniqueName('flood-apps')}.json`);
    writeFileSync(receiptConfig, JSON.stringify(receiptAppsFile()));
    writeFileSync(appsConfig, JSON.stringify(PARSING_APPS));
    const mysqlUrl = new URL(endpoints.mysqlUrl);
    mysqlUrl.pathname = `/${mysql.database}`;
    [port, metricsPort] = [await freePort(), await freePort()];
    child = spawn(process.execPath, ['--import', 'tsx', PUSHCTL, 'receiver'], {
      env: {
        ...process.env,
        PUSH_LOG_LEVEL: 'warn',
        PUSH_RECEIPTS_CONFIG: receiptConfig,
        PUSH_APPS_CONFIG: appsConfig,
        PUSH_RECEIPTS_PORT: String(port),
        PUSH_RECEIPTS_METRICS_PORT: String(metricsPort),
        PUSH_RECEIPTS_BODY_TIMEOUT_MS: '3000',
        PUSH_TOPIC_PREFIX: prefix,
        PUSH_MYSQL_URL: mysqlUrl.toString(),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (chunk: Buffer) => (output = (output + chunk.toString('utf8')).slice(-20_000));
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    for (let i = 0; i < 120; i++) {
      // Not listening yet: asked again; a receiver that exited or never answers fails the test with its output.
      const health = await rawRequest({ port, head: 'GET /health HTTP/1.1\r\nhost: x\r\nconnection: close', waitMs: 1_000 }).catch(() => undefined);
      if (health?.status === 200) return;
      assert.equal(child.exitCode, null, `the receiver exited: ${output}`);
      await sleep(250);
    }
    assert.fail(`the receiver did not start: ${output}`);
  });

  after(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(10_000)]);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    await mysql?.drop();
  });

  let sent = 0;
  /** One genuine callback, alternating Xiaomi (shared secret) and HMS (signed). */
  async function genuine(): Promise<RawAnswer> {
    const n = sent++;
    const now = Date.now();
    if (n % 2 === 0) {
      const body = receiptBodies.xiaomi(`mi-${n}`, `regid-${n}`, 1, now);
      return rawRequest({
        port,
        head: postHead(`/receipts/xiaomi/${TEST_APP}?key=${RECEIPT_SECRETS.xiaomi}`, body.length, { 'content-type': 'application/x-www-form-urlencoded' }),
        body,
      });
    }
    const body = receiptBodies.hms(`req-${n}`, `hms-token-${n}`, 0, now);
    const header = hmsCallbackHeader(RECEIPT_SECRETS.hms, now, randomUUID());
    return rawRequest({
      port,
      head: postHead(`/receipts/hms/${TEST_APP}`, body.length, { 'content-type': 'application/json', 'x-huawei-callback-id': header }),
      body,
    });
  }

  test('wrong keys and stalled bodies leave RSS within 50 MB of idle, and genuine receipts are all accepted', async () => {
    // Warm up (Kafka producer connected, code paths compiled), then let the heap settle.
    for (let i = 0; i < 40; i++) assert.equal((await genuine()).status, 200, output);
    await sleep(2_000);
    const idle = rssKb(child.pid!);

    let peak = idle;
    let flooding = true;
    const sampler = (async () => {
      for (let i = 0; i < 1_200 && flooding; i++) {
        peak = Math.max(peak, rssKb(child.pid!));
        await sleep(50);
      }
    })();

    const junk = Buffer.alloc(1_048_576, 0x7b);
    const wrongKeys = Array.from({ length: WRONG_KEY_CONNECTIONS }, (_, i) =>
      openRaw({ port, from: i % 2 === 0 ? '127.0.0.2' : '127.0.0.3', head: postHead(`/receipts/oppo/${TEST_APP}?key=not-the-key-${i}`, 1_048_576), body: junk })
        .then((s) => readRaw(s, 30_000))
        // A connection the receiver resets while the junk body is still being written is the refusal this case expects.
        .catch(() => ({ status: 0, headers: [], body: '', closedByServer: true }) as RawAnswer),
    );
    const stalled = Array.from({ length: STALLED_BODIES }, (_, i) =>
      openRaw({
        port,
        from: `127.0.0.${4 + (i % 4)}`,
        head: postHead(`/receipts/xiaomi/${TEST_APP}?key=${RECEIPT_SECRETS.xiaomi}`, 1_048_576, { 'content-type': 'application/x-www-form-urlencoded' }),
        body: Buffer.alloc(16 * 1024, 0x61),
      }).then((s) => readRaw(s, 60_000)),
    );
    const accepted: number[] = [];
    for (let i = 0; i < GENUINE_DURING_FLOOD; i++) accepted.push((await genuine()).status);

    const [wrongAnswers, stalledAnswers] = await Promise.all([Promise.all(wrongKeys), Promise.all(stalled)]);
    flooding = false;
    await sampler;
    peak = Math.max(peak, rssKb(child.pid!));
    console.log(`receiver RSS: idle ${idle} kB, peak during the flood ${peak} kB (+${peak - idle} kB)`);

    assert.deepEqual(accepted, new Array(GENUINE_DURING_FLOOD).fill(200), 'every genuine receipt sent during the flood was accepted');
    assert.ok(peak - idle <= RSS_HEADROOM_KB, `RSS grew by ${peak - idle} kB (idle ${idle} kB, peak ${peak} kB)`);
    assert.ok(
      wrongAnswers.every((a) => a.closedByServer && (a.status === 401 || a.status === 0)),
      'wrong keys: 401 or closed at the connection cap, never more',
    );
    assert.ok(wrongAnswers.some((a) => a.status === 401));
    assert.deepEqual(
      [...new Set(stalledAnswers.map((a) => `${a.status} ${a.body} ${a.closedByServer}`))],
      ['408 body_timeout true'],
      'every stalled body cut at the body timeout',
    );
    assert.equal(child.exitCode, null, 'the receiver is still running');

    // Kafka holds exactly the genuine callbacks; the receiver's metrics counted the flood.
    const admin = kafka.admin();
    await admin.connect();
    const [offsets] = await admin.fetchTopicOffsets(topic);
    await admin.disconnect();
    assert.equal(Number(offsets!.high), sent, 'records on push.receipts.raw');
    const metrics = (await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()).split('\n');
    const sum = (prefix: string) => metrics.filter((l) => l.startsWith(prefix)).reduce((n, l) => n + Number(l.split(' ').pop()), 0);
    assert.equal(sum('push_receipts_callbacks_accepted_total{'), sent);
    assert.equal(sum('push_receipts_callbacks_rejected_total{') + sum('push_receipts_connections_refused_total{'), WRONG_KEY_CONNECTIONS + STALLED_BODIES);
  });

  test('SIGTERM closes the receiver: it exits 0 and its port is free again', async () => {
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    const code = await Promise.race([exited, sleep(10_000).then(() => 'still running')]);
    assert.equal(code, 0, output);
    assert.equal(await rawRequest({ port, head: 'GET /health HTTP/1.1\r\nhost: x\r\nconnection: close', waitMs: 1_000 }).catch(() => 'refused'), 'refused');
  });
});
