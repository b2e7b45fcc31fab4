import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fetch } from 'undici';
import { readKey } from '../common/config.ts';
import { CONFIG_KEYS } from '../common/config-keys.ts';
import { ENTRY_KEYS } from '../common/config-keys-entry.ts';
import { ROOT, ensureDir, stackPath } from './paths.ts';
import { aptInstall, logFile, portOpen, readPid, startDetached, stopByPidFile, waitFor } from './process.ts';
import { stackPort, type ServiceStatus, type StackService } from './service.ts';

/**
 * Debian's Prometheus (the `prometheus` package, which brings `promtool`), installed when absent and
 * run by this stack with its config and data under .stack/prometheus: it scrapes the workers, the
 * receipt receiver and the entry, and loads the alert rules of monitoring/alerts.yml.
 * `pushctl stack up --with-prometheus` starts it on 19090 (PUSH_STACK_PROMETHEUS_PORT); the
 * scrape test (test/monitoring/prometheus-scrape.stack.test.ts) starts one of its own for its workers.
 */
const NAME = 'prometheus';
const SERVER = '/usr/bin/prometheus';
export const PROMTOOL = '/usr/bin/promtool';
export const ALERT_RULES = join(ROOT, 'monitoring', 'alerts.yml');

/** Installs Debian's prometheus package (server and promtool) unless both are there. */
export function ensurePrometheusInstalled(): void {
  if (!existsSync(SERVER) || !existsSync(PROMTOOL)) aptInstall(NAME, ['prometheus']);
}

/** One Prometheus server: its name (PID file, log), port, folder, scrape interval and targets by job. */
export interface PrometheusInstance {
  readonly name: string;
  readonly port: number;
  readonly dir: string;
  readonly scrapeIntervalSeconds: number;
  /** host:port of each job's `/metrics`, by job name. */
  readonly targets: Readonly<Record<string, readonly string[]>>;
}

/**
 * The stack's Prometheus: the workers, the receiver and the entry on this host's configured ports
 * (PUSH_METRICS_PORT, PUSH_RECEIPTS_METRICS_PORT, PUSH_ENTRY_PORT), every 15 s. More hosts: edit
 * .stack/prometheus/targets/<job>.json, which Prometheus rereads by itself.
 */
export function stackPrometheus(env: NodeJS.ProcessEnv = process.env): PrometheusInstance {
  const local = (port: number) => [`127.0.0.1:${port}`];
  return {
    name: NAME,
    port: stackPort('prometheus', 'PROMETHEUS'),
    dir: stackPath('prometheus'),
    scrapeIntervalSeconds: 15,
    targets: {
      workers: local(readKey(env, CONFIG_KEYS.PUSH_METRICS_PORT)),
      receiver: local(readKey(env, CONFIG_KEYS.PUSH_RECEIPTS_METRICS_PORT)),
      entry: local(readKey(env, ENTRY_KEYS.PUSH_ENTRY_PORT)),
    },
  };
}

/** prometheus.yml (JSON is YAML): one job per target list, read from a file Prometheus watches. */
function writeConfig(instance: PrometheusInstance): string {
  const targetsDir = ensureDir(join(instance.dir, 'targets'));
  const interval = `${instance.scrapeIntervalSeconds}s`;
  const jobs = Object.entries(instance.targets).map(([job, targets]) => {
    const file = join(targetsDir, `${job}.json`);
    writeFileSync(file, JSON.stringify([{ targets, labels: { job } }], null, 2));
    return { job_name: job, metrics_path: '/metrics', file_sd_configs: [{ files: [file], refresh_interval: '30s' }] };
  });
  const config = {
    global: { scrape_interval: interval, evaluation_interval: interval, scrape_timeout: `${Math.min(10, instance.scrapeIntervalSeconds)}s` },
    rule_files: [ALERT_RULES],
    scrape_configs: jobs,
  };
  const file = join(instance.dir, 'prometheus.yml');
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

/** Prometheus' HTTP API on `port`: the `data` of a successful answer, or an error naming the API's own. */
export async function prometheusApi<T>(port: number, path: string, params: Record<string, string> = {}): Promise<T> {
  const url = `http://127.0.0.1:${port}${path}${Object.keys(params).length ? `?${new URLSearchParams(params)}` : ''}`;
  const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  const body = (await response.json()) as { status: string; data?: T; errorType?: string; error?: string };
  if (body.status !== 'success') throw new Error(`${path} ${JSON.stringify(params)}: ${body.errorType ?? response.status}: ${body.error ?? ''}`);
  return body.data as T;
}

async function version(port: number): Promise<string | undefined> {
  return prometheusApi<{ version: string }>(port, '/api/v1/status/buildinfo').then(
    (b) => b.version,
    () => undefined, // not answering: reported as not healthy
  );
}

export function prometheusService(instance: PrometheusInstance = stackPrometheus()): StackService {
  const { name, port } = instance;
  const ready = async () => (await fetch(`http://127.0.0.1:${port}/-/ready`, { signal: AbortSignal.timeout(2000) }).catch(() => undefined))?.ok === true;
  return {
    name,
    port,
    async up() {
      if (await portOpen(port)) {
        await waitFor(name, ready, { timeoutMs: 30_000 });
        return 'reused';
      }
      ensurePrometheusInstalled();
      const config = writeConfig(instance);
      const args = [
        `--config.file=${config}`,
        `--storage.tsdb.path=${ensureDir(join(instance.dir, 'data'))}`,
        '--storage.tsdb.retention.time=7d',
        `--web.listen-address=127.0.0.1:${port}`,
        '--web.enable-lifecycle',
      ];
      const pid = startDetached(name, SERVER, args, { cwd: instance.dir });
      console.log(`[stack] ${name} starting (pid ${pid}, port ${port}, log ${logFile(name)})`);
      await waitFor(name, ready, { timeoutMs: 60_000, pid });
      return 'started';
    },
    down: () => stopByPidFile(name),
    async status(): Promise<ServiceStatus> {
      const v = await version(port);
      return { name, port, healthy: v !== undefined, version: v, pid: readPid(name), detail: `http://127.0.0.1:${port}` };
    },
  };
}
