/**
 * The processes of a repartition run (chaos/repartition.ts): worker processes per group of stages
 * and generation (so the old generation can be stopped in pipeline order, as the runbook in
 * docs/operations.md says), receipt receivers behind a forwarder on the port the emulators call
 * (so the callbacks move from the old generation's receiver to the new one's without a gap), and
 * the waits on consumer groups.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureDir, LOG_DIR } from '../stack/paths.ts';
import { type Environment } from '../demo/environment.ts';
import { freePort } from '../demo/ports.ts';
import { groupStatus } from '../pipeline/group-status.ts';
import { topicName } from '../pipeline/topics.ts';
import { TABLE_TOPICS, type Generation } from '../pipeline/repartition/generation.ts';
import { chaosAdmin, sleep } from './drain.ts';

const PUSHCTL = fileURLToPath(new URL('../cli/pushctl.ts', import.meta.url));

export interface Proc {
  readonly name: string;
  readonly port: number;
  readonly child: ChildProcess;
}

/** Starts `pushctl <command>` of generation `g` with the environment's settings; its log goes to .stack/logs. */
export async function startProcess(
  env: Environment,
  g: Generation,
  partitions: number,
  name: string,
  command: 'run' | 'receiver',
  extra: Record<string, string>,
): Promise<Proc> {
  const port = await freePort();
  const log = openSync(join(ensureDir(LOG_DIR), `${env.run}-${name}.log`), 'a');
  const child = spawn(process.execPath, ['--import', 'tsx', PUSHCTL, command], {
    env: {
      ...process.env,
      ...env.workerEnv,
      PUSH_TOPIC_PREFIX: g.prefix,
      PUSH_APPLICATION_ID: g.applicationId,
      PUSH_PARTITIONS: String(partitions),
      PUSH_METRICS_PORT: String(port),
      PUSH_RECEIVER: 'false',
      ...extra,
    },
    stdio: ['ignore', log, log],
  });
  return { name, port, child };
}

/** Waits until a worker answers /readyz (every stage holds its tasks). */
export async function waitReady(p: Proc, timeoutMs = 180_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (p.child.exitCode !== null) throw new Error(`${p.name} exited with ${p.child.exitCode} (see its log in ${LOG_DIR})`);
    const ok = await fetch(`http://127.0.0.1:${p.port}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${p.name} not ready after ${timeoutMs} ms`);
    await sleep(250);
  }
}

/** SIGTERM (a graceful stop: in-flight work finished and committed); resolves when the process exited. */
export function stop(p: Proc): Promise<void> {
  return new Promise((resolve) => {
    if (p.child.exitCode !== null || p.child.signalCode !== null) return resolve();
    p.child.once('exit', () => resolve());
    p.child.kill('SIGTERM');
    setTimeout(() => p.child.kill('SIGKILL'), 60_000).unref();
  });
}

/**
 * Waits until the groups of `stages` in generation `g` have processed every record of their
 * stream topics (table topics excluded: the cut-over carries them). Returns the lag seen last.
 */
export async function waitCaughtUp(g: Generation, stages: readonly string[], timeoutMs = 300_000): Promise<void> {
  const tables = new Set(TABLE_TOPICS.map((k) => topicName(k, g.prefix)));
  const admin = chaosAdmin();
  await admin.connect();
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      let behind = 0;
      for (const stage of stages) for (const t of (await groupStatus(admin, `${g.applicationId}-${stage}`)).topics) if (!tables.has(t.topic)) behind += t.lag;
      if (behind === 0) return;
      if (Date.now() > deadline) throw new Error(`${stages.join(', ')} of ${g.applicationId} still ${behind} records behind after ${timeoutMs} ms`);
      await sleep(1000);
    }
  } finally {
    await admin.disconnect();
  }
}

/** Stream partitions the groups of generation `g` left behind. */
export async function lagging(g: Generation, stages: readonly string[]): Promise<Array<{ group: string; topic: string; partition: number; lag: number }>> {
  const tables = new Set(TABLE_TOPICS.map((k) => topicName(k, g.prefix)));
  const admin = chaosAdmin();
  await admin.connect();
  try {
    const out: Array<{ group: string; topic: string; partition: number; lag: number }> = [];
    for (const stage of stages) {
      const group = `${g.applicationId}-${stage}`;
      for (const t of (await groupStatus(admin, group)).topics)
        if (!tables.has(t.topic)) for (const p of t.partitions) if (p.lag > 0) out.push({ group, topic: t.topic, partition: p.partition, lag: p.lag });
    }
    return out;
  } finally {
    await admin.disconnect();
  }
}

/** A TCP forwarder on `port` whose target can be switched: connections made after `retarget` go to the new one. */
export interface Forwarder {
  retarget(port: number): void;
  close(): Promise<void>;
}

export async function startForwarder(port: number, targetPort: number): Promise<Forwarder> {
  let target = targetPort;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(target, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => [client, upstream].forEach((x) => x.destroy()));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', () => resolve()));
  return {
    retarget: (p) => (target = p),
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
