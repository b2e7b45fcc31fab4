import { appsVersions, describeVersions, reloadFleet, type WorkerReload } from '../../pipeline/apps-fleet.ts';
import { UsageError } from '../args.ts';
import { metricsUrls } from './status.ts';

export const appsHelp = `pushctl apps reload|version [--metrics URL[,URL...]] [--json]

  the vendor apps file (PUSH_APPS_CONFIG) of a fleet of workers, through each worker's metrics
  port (--metrics, else PUSH_STATUS_METRICS_URLS, else this host's PUSH_METRICS_PORT):
  reload    asks every worker to read and validate its apps file now (POST /-/reload) and prints
            what each did: the version in force and the apps added, removed and changed, or the
            field a refused file names (the worker then keeps the version it runs). Exit 1 when a
            worker refused the file or did not answer. A worker also reloads by itself when the
            file changes, and on SIGHUP (docs/operations.md, "Reloading the apps file").
  version   the version each worker runs (sha256 of the file's content, first 12 hex digits)`;

const list = (label: string, ids: unknown) => (Array.isArray(ids) && ids.length > 0 ? ` ${label} ${ids.join(',')}` : '');

/** One worker's reload, in a line. */
export function describeReload(r: WorkerReload): string {
  if (!r.reachable) return `${r.url}: no answer (${r.error})`;
  if (r.status === 404) return `${r.url}: no apps file (a worker without PUSH_APPS_CONFIG: nothing to reload)`;
  const x = r.result;
  if (x.ok === true) {
    const moved = `${list('added', x.added)}${list('removed', x.removed)}${list('changed', x.changed)}`;
    return `${r.url}: version ${String(x.version)}${x.version === x.previous ? ' (unchanged)' : ` (was ${String(x.previous)})`}${moved}`;
  }
  return `${r.url}: REFUSED ${String(x.key ?? '')}: ${String(x.error ?? `HTTP ${r.status}`)}; still version ${String(x.version ?? '?')}`;
}

export async function appsCommand(args: string[]): Promise<number> {
  const i = args.indexOf('--metrics');
  const urls = metricsUrls(i >= 0 ? args[i + 1] : undefined);
  const json = args.includes('--json');
  if (args[0] === 'version') {
    const versions = await appsVersions(urls);
    if (json) console.log(JSON.stringify(versions, null, 2));
    else for (const line of describeVersions(versions)) console.log(line.trim());
    return versions.every((v) => 'version' in v) ? 0 : 1;
  }
  if (args[0] !== 'reload') throw new UsageError('expected an action: reload | version');
  const results = await reloadFleet(urls);
  if (json) console.log(JSON.stringify(results, null, 2));
  else for (const r of results) console.log(describeReload(r));
  // A worker without an apps file (404) has nothing to reload; one that refused the file, or did not answer, fails the command.
  return results.every((r) => r.reachable && (r.status === 404 || r.result.ok === true)) ? 0 : 1;
}
