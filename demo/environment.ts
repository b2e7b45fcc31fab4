/**
 * The embedded environment the demo, the benchmark and the chaos run share: the local stack with
 * migrations applied, all six vendor emulators, and N worker processes (the first also serving
 * receipt callbacks) on their own topic prefix and application id, so runs never see each other.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { setPriority } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { stackUp } from '../stack/index.ts';
import { ensureDir, LOG_DIR, stackPath } from '../stack/paths.ts';
import { migrateAll } from '../migrations/migrate.ts';
import { createPipelineTopics } from '../pipeline/topics-admin.ts';
import { startEmulators, type StartedEmulators } from '../emulators/index.ts';
import { delay } from '../stack/process.ts';
import { freePort } from './ports.ts';
import { BACKGROUND_STAGE_NAMES, EVENT_PATH_STAGE_NAMES } from '../common/config-keys.ts';

export interface EnvironmentOptions {
  /** Worker processes. Default 1. */
  readonly instances?: number;
  /** Topic partitions. Default 6. */
  readonly partitions?: number;
  /** Extra PUSH_* settings for every worker. */
  readonly workerEnv?: Readonly<Record<string, string>>;
  /** Run name: prefixes topics and the application id. Default a fresh one. */
  readonly run?: string;
  /** Print what is happening. Default true. */
  readonly verbose?: boolean;
  /**
   * Bring the local stack up first. Default true; false when the PUSH_* endpoints name services
   * started otherwise (the secured stack, test/stack/secured-stack.stack.test.ts, or a cluster of one's own).
   */
  readonly startStack?: boolean;
  /**
   * Run the stages off the IM event path (receipts with the receipt receiver, the ClickHouse sink,
   * the business lane) in a worker process of their own (the last one, index `instances`, at a
   * lower CPU priority), the other workers running decisions and fan-out only, as docs/operations.md
   * advises for production. Default false: every worker runs every stage.
   */
  readonly backgroundWorker?: boolean;
  /**
   * Vendor apps of the run (`appIds`): the run's app, then `<app>-2`, `<app>-3`, ... Default 1. With
   * several, the last one's APNs entry authenticates with a provider certificate (docs/vendors.md,
   * "APNs certificate auth"), the others with the team's token key, so a run covers both.
   */
  readonly apps?: number;
}

export interface Worker {
  readonly index: number;
  readonly metricsPort: number;
  process: ChildProcess;
}

export interface Environment {
  readonly run: string;
  readonly topicPrefix: string;
  readonly applicationId: string;
  /** The vendor app of this run (its own, so ClickHouse figures of one run can be read apart). */
  readonly appId: string;
  /** Every vendor app of the run, `appId` first (`apps`). */
  readonly appIds: readonly string[];
  /** The apps file the workers read (PUSH_APPS_CONFIG). */
  readonly appsConfigPath: string;
  /**
   * Replaces the apps file as an operator's deploy would: written beside it and renamed over it, so
   * a worker never reads half a file (pipeline/apps-reload.ts reloads it).
   */
  writeAppsConfig(raw: unknown): void;
  /**
   * The receipt URLs the entry of `appId` carries (Xiaomi, OPPO), for apps added later
   * (`emulators.addApps`); HMS and vivo post every app's receipts to the one URL set at start.
   */
  receiptUrls(appId: string): Partial<Record<'xiaomi' | 'oppo', string>>;
  readonly emulators: StartedEmulators;
  readonly receiptPort: number;
  readonly workers: Worker[];
  /** Index of the worker running the stages off the event path (`backgroundWorker`), else undefined. */
  readonly backgroundWorkerIndex?: number;
  /** The env every worker gets (for starting more, or restarting one). */
  readonly workerEnv: Readonly<Record<string, string>>;
  startWorker(index: number, options?: { receiver?: boolean }): Promise<Worker>;
  /** Waits until every worker answers /readyz. */
  waitReady(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** Scheduling niceness of the background worker (`backgroundWorker`); event-path workers keep 0. */
const BACKGROUND_WORKER_NICE = 10;

const PUSHCTL = fileURLToPath(new URL('../cli/pushctl.ts', import.meta.url));

const workerLogName = (run: string, index: number) => `${run}-worker-${index}.log`;

/**
 * The last lines of a worker's log, as the reason a start failed: a clean checkout's run (CI) keeps
 * only what the test prints, not the log files.
 */
export function workerLogTail(run: string, index: number, lines = 15): string {
  const path = join(LOG_DIR, workerLogName(run, index));
  try {
    const tail = readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines);
    return [...tail, `(the whole log: ${path})`].join('\n');
  } catch (error) {
    return `(no log at ${path}: ${(error as Error).message})`;
  }
}

export async function startEnvironment(options: EnvironmentOptions = {}): Promise<Environment> {
  const say = (line: string) => options.verbose !== false && console.log(line);
  const run = options.run ?? `r${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
  const topicPrefix = `${run}.`;
  const applicationId = `offline-push-${run}`;
  const appId = `app-${run}`;
  const partitions = options.partitions ?? 6;

  if (options.startStack !== false) {
    say('[env] local stack ...');
    await stackUp();
  }
  say('[env] migrations ...');
  await migrateAll();
  await createPipelineTopics({ partitions, prefix: topicPrefix });

  const appIds = Array.from({ length: options.apps ?? 1 }, (_, i) => (i === 0 ? appId : `${appId}-${i + 1}`));
  const receiptPort = await freePort();
  const secret = randomBytes(16).toString('hex');
  const receiptUrl = (vendor: string, app: string) => `http://127.0.0.1:${receiptPort}/receipts/${vendor}/${app}${vendor === 'hms' ? '' : `?key=${secret}`}`;
  const receiptUrls = (app: string) => ({
    hms: receiptUrl('hms', app),
    xiaomi: receiptUrl('xiaomi', app),
    oppo: receiptUrl('oppo', app),
    vivo: receiptUrl('vivo', app),
  });
  say('[env] vendor emulators (APNs, FCM, HMS, Xiaomi, OPPO, vivo) ...');
  // HMS and vivo post every app's receipts to the one URL of their console (the first app's); Xiaomi
  // and OPPO to the URL each app's entry carries.
  const emulators = await startEmulators({ apps: appIds, receiptUrls: receiptUrls(appId), apnsCertificateApps: appIds.length > 1 ? appIds.slice(-1) : [] });
  for (const app of emulators.rawAppsConfig.apps.slice(1)) {
    const urls = receiptUrls(app.appId);
    app.vendors.xiaomi = { ...app.vendors.xiaomi, receiptUrl: urls.xiaomi };
    app.vendors.oppo = { ...app.vendors.oppo, receiptUrl: urls.oppo };
  }
  const dir = ensureDir(stackPath('runs', run));
  const appsConfig = join(dir, 'apps.json');
  const writeAppsConfig = (raw: unknown) => {
    const next = join(dir, '.apps.json.next');
    writeFileSync(next, JSON.stringify(raw, null, 2), { mode: 0o600 });
    renameSync(next, appsConfig);
  };
  writeAppsConfig(emulators.rawAppsConfig);
  const receiptsConfig = join(dir, 'receipts.json');
  writeFileSync(
    receiptsConfig,
    JSON.stringify({
      apps: appIds.map((app) => ({
        appId: app,
        hms: emulators.hmsReceiptSigning,
        xiaomi: { sharedSecret: secret },
        oppo: { sharedSecret: secret },
        vivo: { sharedSecret: secret },
      })),
    }),
    { mode: 0o600 },
  );

  const workerEnv: Record<string, string> = {
    PUSH_APPLICATION_ID: applicationId,
    PUSH_TOPIC_PREFIX: topicPrefix,
    PUSH_PARTITIONS: String(partitions),
    PUSH_APPS_CONFIG: appsConfig,
    PUSH_RECEIPTS_CONFIG: receiptsConfig,
    PUSH_RECEIPTS_PORT: String(receiptPort),
    PUSH_LOG_LEVEL: process.env.PUSH_LOG_LEVEL ?? 'warn',
    ...options.workerEnv,
  };
  const workers: Worker[] = [];

  const instances = options.instances ?? 1;
  const backgroundWorkerIndex = options.backgroundWorker ? instances : undefined;
  /** PUSH_STAGES of worker `index` when the stages off the event path have a worker of their own. */
  const stagesOf = (index: number): Record<string, string> =>
    backgroundWorkerIndex === undefined ? {} : { PUSH_STAGES: (index === backgroundWorkerIndex ? BACKGROUND_STAGE_NAMES : EVENT_PATH_STAGE_NAMES).join(',') };
  /** The receipt receiver runs with the receipts stage: in the background worker when there is one, else in worker 0. */
  const receiverIndex = backgroundWorkerIndex ?? 0;

  const startWorker = async (index: number, o: { receiver?: boolean } = {}): Promise<Worker> => {
    const metricsPort = await freePort();
    const log = openSync(join(ensureDir(LOG_DIR), workerLogName(run, index)), 'a');
    // PUSH_WORKER_NODE_ARGS adds node flags to the workers (e.g. --cpu-prof for profiling a run).
    const nodeArgs = (process.env.PUSH_WORKER_NODE_ARGS ?? '').split(' ').filter(Boolean);
    const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', PUSHCTL, 'run'], {
      env: {
        ...process.env,
        ...workerEnv,
        ...stagesOf(index),
        PUSH_METRICS_PORT: String(metricsPort),
        PUSH_RECEIVER: String(o.receiver ?? index === receiverIndex),
      },
      stdio: ['ignore', log, log],
    });
    // The background stages yield the CPU to the event path: on a shared box a campaign's bursts, receipt floods and
    // ClickHouse batches must not delay a chat push.
    if (index === backgroundWorkerIndex && child.pid !== undefined) setPriority(child.pid, BACKGROUND_WORKER_NICE);
    const worker = { index, metricsPort, process: child };
    const existing = workers.findIndex((w) => w.index === index);
    if (existing >= 0) workers[existing] = worker;
    else workers.push(worker);
    return worker;
  };

  const lane = backgroundWorkerIndex === undefined ? '' : ` for ${EVENT_PATH_STAGE_NAMES.join(' and ')} and 1, niced, for ${BACKGROUND_STAGE_NAMES.join(', ')}`;
  say(`[env] ${instances} worker process(es)${lane}, logs in ${LOG_DIR}/${run}-worker-*.log ...`);
  for (let i = 0; i < instances; i++) await startWorker(i);
  if (backgroundWorkerIndex !== undefined) await startWorker(backgroundWorkerIndex);

  const env: Environment = {
    run,
    topicPrefix,
    applicationId,
    appId,
    appIds,
    appsConfigPath: appsConfig,
    writeAppsConfig,
    receiptUrls: (app) => ({ xiaomi: receiptUrl('xiaomi', app), oppo: receiptUrl('oppo', app) }),
    emulators,
    receiptPort,
    workers,
    backgroundWorkerIndex,
    workerEnv,
    startWorker,
    async waitReady(timeoutMs = 120_000) {
      const deadline = Date.now() + timeoutMs;
      for (const worker of workers) {
        for (;;) {
          if (worker.process.exitCode !== null)
            throw new Error(`worker ${worker.index} exited with ${worker.process.exitCode}; its log ends:\n${workerLogTail(run, worker.index)}`);
          const ok = await fetch(`http://127.0.0.1:${worker.metricsPort}/readyz`).then(
            (r) => r.ok,
            () => false,
          );
          if (ok) break;
          if (Date.now() > deadline) throw new Error(`worker ${worker.index} not ready after ${timeoutMs} ms`);
          await delay(250);
        }
      }
    },
    async close() {
      await Promise.all(
        workers.map(
          (w) =>
            new Promise<void>((resolve) => {
              if (w.process.exitCode !== null || w.process.signalCode !== null) return resolve();
              w.process.once('exit', () => resolve());
              w.process.kill('SIGTERM');
              setTimeout(() => w.process.kill('SIGKILL'), 30_000).unref();
            }),
        ),
      );
      await emulators.close();
    },
  };
  return env;
}
