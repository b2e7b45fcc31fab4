import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { readInt, readKey } from '../../common/config.ts';
import { CONFIG_KEYS } from '../../common/config-keys.ts';
import { closeOnSignals } from '../../topology/shutdown.ts';
import { isTransientStartError, startWorker } from '../../pipeline/worker.ts';
import { retry } from '../../common/retry.ts';
import { errorMessage } from '../../common/errors.ts';
import { scrubSecrets } from '../../common/secret-values.ts';
import { STAGES } from '../../pipeline/apps/index.ts';

export const runHelp = `pushctl run [--stages ${STAGES.join(',')}] [--instances N] [--receiver]

  runs pipeline workers until SIGTERM/SIGINT (finishes in-flight batches, commits, leaves groups);
  SIGHUP reloads the apps file (PUSH_APPS_CONFIG), as a change of the file does.
  --stages      which stages (default all; PUSH_STAGES)
  --instances   start N worker processes (metrics ports PUSH_METRICS_PORT, +1, ...); default 1
  --receiver    also serve vendor receipt callbacks (PUSH_RECEIVER=true)
  configuration: PUSH_* keys, see README (PUSH_APPS_CONFIG is required for fan-out and receipts)`;

function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

export async function runCommand(args: string[]): Promise<number> {
  const env = { ...process.env };
  const stages = flag(args, '--stages');
  if (stages) env.PUSH_STAGES = stages;
  if (args.includes('--receiver')) env.PUSH_RECEIVER = 'true';
  const instances = readInt({ '--instances': flag(args, '--instances') }, '--instances', 1, { min: 1, max: 64 });
  if (instances === 1) {
    // Kafka may be restarting (or a leader moving) just as a worker starts: try again for a while.
    const worker = await retry(() => startWorker(env), {
      maxAttempts: 20,
      initialDelayMs: 500,
      maxDelayMs: 10_000,
      shouldRetry: isTransientStartError,
      onRetry: (error, attempt, delayMs) =>
        console.error(scrubSecrets(`worker start failed (attempt ${attempt}): ${errorMessage(error)}; retrying in ${delayMs} ms`)),
    });
    console.log(`worker running: stages ${worker.config.stages.join(',')}, metrics http://127.0.0.1:${worker.metricsPort}/metrics`);
    closeOnSignals([worker]);
    // A stage that stopped on an unrecoverable error takes the worker down, so a supervisor restarts it.
    await worker.failed;
    await worker.close().catch((error: unknown) => console.error(`closing the failed worker: ${errorMessage(error)}`));
    return 1;
  }
  // Several instances: one child process each, so a crash of one is a crash of one.
  const basePort = readKey(env, CONFIG_KEYS.PUSH_METRICS_PORT);
  const pushctl = fileURLToPath(new URL('../pushctl.ts', import.meta.url));
  const children: ChildProcess[] = [];
  for (let i = 0; i < instances; i++) {
    const childEnv = { ...env, PUSH_METRICS_PORT: String(basePort === 0 ? 0 : basePort + i), ...(i > 0 ? { PUSH_RECEIVER: 'false' } : {}) };
    children.push(spawn(process.execPath, ['--import', 'tsx', pushctl, 'run'], { env: childEnv, stdio: 'inherit' }));
  }
  const stop = () => children.forEach((c) => c.kill('SIGTERM'));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  // SIGHUP reloads each worker's apps file (docs/operations.md, "Reloading the apps file").
  process.on('SIGHUP', () => children.forEach((c) => c.kill('SIGHUP')));
  const codes = await Promise.all(children.map((c) => new Promise<number>((resolve) => c.once('exit', (code) => resolve(code ?? 1)))));
  return codes.every((c) => c === 0) ? 0 : 1;
}
