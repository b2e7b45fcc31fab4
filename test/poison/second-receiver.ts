/**
 * A second receipt receiver in a process of its own (`pushctl receiver`, cli/commands/receiver.ts)
 * beside the worker's: the same topic prefix, vendor apps and MySQL database (so the same HMS nonce
 * table), and a receipt apps file that may hold more apps than the worker's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { sleep } from '../../chaos/drain.ts';
import type { PoisonStack } from './poison-stack.ts';

const PUSHCTL = fileURLToPath(new URL('../../cli/pushctl.ts', import.meta.url));

export interface ReceiverApp {
  readonly appId: string;
  readonly hms: { readonly callbackUsername: string; readonly callbackKey: string };
  readonly sharedSecret: string;
}

export interface SecondReceiver {
  readonly port: number;
  /** The process's exit, if it ended. */
  exit(): string | undefined;
  close(): Promise<void>;
}

export async function startSecondReceiver(stack: PoisonStack, apps: readonly ReceiverApp[]): Promise<SecondReceiver> {
  const receiptsConfig = stack.writeRunFile(
    'receipts-second.json',
    JSON.stringify({
      apps: apps.map((a) => ({
        appId: a.appId,
        hms: a.hms,
        xiaomi: { sharedSecret: a.sharedSecret },
        oppo: { sharedSecret: a.sharedSecret },
        vivo: { sharedSecret: a.sharedSecret },
      })),
    }),
  );
  const port = await stack.freePort();
  const w = stack.env.workerEnv;
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', PUSHCTL, 'receiver'], {
    env: {
      ...process.env,
      PUSH_TOPIC_PREFIX: w.PUSH_TOPIC_PREFIX!,
      PUSH_APPS_CONFIG: w.PUSH_APPS_CONFIG!,
      PUSH_MYSQL_URL: w.PUSH_MYSQL_URL!,
      PUSH_RECEIPTS_CONFIG: receiptsConfig,
      PUSH_RECEIPTS_PORT: String(port),
      PUSH_RECEIPTS_METRICS_PORT: '0',
      PUSH_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-4000)));
  const exit = () => (child.exitCode !== null ? `exited with ${child.exitCode}` : child.signalCode !== null ? `killed by ${child.signalCode}` : undefined);
  for (const deadline = Date.now() + 30_000; !out.includes(`receipt receiver on port ${port}`);) {
    if (exit() || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the second receiver did not start (${exit() ?? 'timeout'}): ${err}`);
    }
    await sleep(100);
  }
  return {
    port,
    exit,
    close: () =>
      new Promise<void>((resolve) => {
        if (exit()) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
      }),
  };
}
