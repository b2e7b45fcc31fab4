/**
 * `pushctl apps` over a fleet of workers, through each worker's metrics port (the URLs of
 * PUSH_STATUS_METRICS_URLS): which apps file version each runs (push_apps_config_info), and
 * `POST /-/reload` to make each reload it now (pipeline/apps-reload.ts; docs/operations.md,
 * "Reloading the apps file").
 */
import { parseSamples } from './group-status.ts';

/** A worker's `/-/reload` URL, from its `/metrics` URL. */
export function reloadUrlOf(metricsUrl: string): string {
  const url = new URL(metricsUrl);
  url.pathname = '/-/reload';
  url.search = '';
  return url.toString();
}

/** One worker's answer to a reload: its JSON result (pipeline/apps-reload.ts AppsReloadResult), or why there was none. */
export type WorkerReload =
  | { readonly url: string; readonly reachable: true; readonly status: number; readonly result: Record<string, unknown> }
  | { readonly url: string; readonly reachable: false; readonly error: string };

/** Asks every worker to reload its apps file, all at once; each answers for itself. */
export function reloadFleet(metricsUrls: readonly string[], timeoutMs = 10_000): Promise<WorkerReload[]> {
  return Promise.all(
    metricsUrls.map(async (metricsUrl): Promise<WorkerReload> => {
      const url = reloadUrlOf(metricsUrl);
      try {
        const res = await fetch(url, { method: 'POST', signal: AbortSignal.timeout(timeoutMs) });
        const text = await res.text();
        let result: Record<string, unknown>;
        try {
          result = JSON.parse(text) as Record<string, unknown>;
        } catch {
          result = { ok: false, error: text.trim() || `HTTP ${res.status}` };
        }
        return { url, reachable: true, status: res.status, result };
      } catch (error) {
        return { url, reachable: false, error: (error as Error).message };
      }
    }),
  );
}

/** The apps file version one worker runs, or why it could not be read. */
export type WorkerAppsVersion = { readonly url: string; readonly version: string | null } | { readonly url: string; readonly error: string };

/** Reads push_apps_config_info from each worker's /metrics: the version of the apps file it runs (null: it has none). */
export function appsVersions(metricsUrls: readonly string[], timeoutMs = 2000): Promise<WorkerAppsVersion[]> {
  return Promise.all(
    metricsUrls.map(async (url): Promise<WorkerAppsVersion> => {
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
        if (!res.ok) return { url, error: `HTTP ${res.status}` };
        const info = parseSamples(await res.text()).find((s) => s.name === 'push_apps_config_info' && s.value === 1);
        return { url, version: info?.labels.version ?? null };
      } catch (error) {
        return { url, error: (error as Error).message };
      }
    }),
  );
}

/** One line per worker, and a warning when the workers that answered run different versions. */
export function describeVersions(versions: readonly WorkerAppsVersion[]): string[] {
  const lines = versions.map((v) =>
    'error' in v
      ? `  apps file: no worker metrics at ${v.url} (${v.error})`
      : `  apps file: ${v.version === null ? 'none' : `version ${v.version}`} (${v.url})`,
  );
  const distinct = new Set(versions.flatMap((v) => ('version' in v && v.version !== null ? [v.version] : [])));
  if (distinct.size > 1) lines.push(`  apps file: WORKERS DIFFER (${[...distinct].join(', ')}): reload them (pushctl apps reload) or check the file they read`);
  return lines;
}
