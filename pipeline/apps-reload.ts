/**
 * A worker's reload of its apps file (PUSH_APPS_CONFIG) without a restart (docs/operations.md,
 * "Reloading the apps file"): on a change in the file's folder (debounced), on SIGHUP, or when
 * `pushctl apps reload` posts to the worker's `/-/reload`. The file is read and validated as a
 * whole; a valid one is put in force in one step (sinks/vendors/registry.ts `replace`: apps added,
 * removed and changed in place, replaced adapters drained and closed), an invalid or unreadable
 * one is refused naming the field, and the running version stays.
 */
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { ConfigError } from '../common/errors.ts';
import type { Logger } from '../common/log.ts';
import type { PipelineMetrics } from '../sinks/metrics/pipeline-metrics.ts';
import { readAppsFile } from '../sinks/vendors/apps-config.ts';
import type { CredentialExpiryWatch } from '../sinks/vendors/credential-expiry.ts';
import type { ReloadableVendorRegistry } from '../sinks/vendors/registry.ts';

/** What asked for a reload: the folder watch, SIGHUP, or `/-/reload`. */
export type ReloadTrigger = 'watch' | 'signal' | 'http';

/** The answer of one reload (and the JSON body of `/-/reload`). */
export type AppsReloadResult =
  | {
      readonly ok: true;
      /** The version in force now. */
      readonly version: string;
      readonly previous: string;
      readonly added: readonly string[];
      readonly removed: readonly string[];
      readonly changed: readonly string[];
      readonly unchanged: readonly string[];
    }
  | {
      readonly ok: false;
      /** The version still in force. */
      readonly version: string;
      /** The field (or PUSH_APPS_CONFIG) the refusal names. */
      readonly key: string;
      readonly error: string;
    };

export interface AppsReloaderOptions {
  /** PUSH_APPS_CONFIG. */
  readonly path: string;
  /** The version `registry` was built from (readAppsFile at start). */
  readonly version: string;
  readonly registry: ReloadableVendorRegistry;
  readonly metrics: Pick<PipelineMetrics, 'appsConfigInfo' | 'appsReloads' | 'appsReloadFailures'>;
  readonly logger: Logger;
  /** PUSH_APPS_RELOAD_DEBOUNCE_MS. */
  readonly debounceMs: number;
  /** Re-pointed at each version put in force. */
  readonly expiry?: CredentialExpiryWatch;
}

export class AppsReloader {
  private running: string;
  private watcher: FSWatcher | undefined;
  private debounce: NodeJS.Timeout | undefined;
  /** Reloads run one at a time, in the order asked. */
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(private readonly options: AppsReloaderOptions) {
    this.running = options.version;
    options.metrics.appsConfigInfo.clear();
    options.metrics.appsConfigInfo.set({ version: this.running }, 1);
    options.expiry?.watch(options.registry.config);
  }

  /** The version in force. */
  get version(): string {
    return this.running;
  }

  /** Reads, validates and puts the apps file in force, or refuses it; never throws. */
  reload(trigger: ReloadTrigger): Promise<AppsReloadResult> {
    const next = this.queue.then(() => this.reloadNow(trigger));
    this.queue = next.catch(() => undefined);
    return next;
  }

  private reloadNow(trigger: ReloadTrigger): AppsReloadResult {
    const { registry, metrics, logger } = this.options;
    let read: ReturnType<typeof readAppsFile>;
    try {
      read = readAppsFile(this.options.path);
    } catch (error) {
      const key = error instanceof ConfigError ? error.key : 'PUSH_APPS_CONFIG';
      const message = error instanceof Error ? error.message : String(error);
      metrics.appsReloadFailures.inc({ trigger });
      // The messages name the field and what is wrong with it, never a secret's value.
      logger.error('apps file refused: the running version stays', { trigger, version: this.running, key, error: message });
      return { ok: false, version: this.running, key, error: message };
    }
    const previous = this.running;
    const change = registry.replace(read.config);
    const moved = change.added.length + change.removed.length + change.changed.length > 0;
    if (!moved && read.version === previous) {
      logger.debug('apps file unchanged', { trigger, version: previous });
      return { ok: true, version: previous, previous, added: [], removed: [], changed: [], unchanged: change.unchanged };
    }
    this.running = read.version;
    metrics.appsConfigInfo.clear();
    metrics.appsConfigInfo.set({ version: read.version }, 1);
    metrics.appsReloads.inc({ trigger });
    this.options.expiry?.watch(read.config);
    logger.info('apps file reloaded', { trigger, version: read.version, previous, added: change.added, removed: change.removed, changed: change.changed });
    const replaced = [...change.changed, ...change.removed];
    if (replaced.length > 0)
      change.drained.then(
        () => logger.info('replaced vendor adapters drained and closed', { apps: replaced }),
        (error: unknown) => logger.warn('closing replaced vendor adapters failed', { apps: replaced, error }),
      );
    return { ok: true, version: read.version, previous, added: change.added, removed: change.removed, changed: change.changed, unchanged: change.unchanged };
  }

  /**
   * Watches the file's folder (an editor's or a secret store's rename replaces the file, which a
   * watch of the file itself would not follow): any change there reloads after `debounceMs`; a
   * reload that finds nothing changed does nothing. A secret kept beside the file is seen too.
   */
  start(): void {
    if (this.watcher || this.closed) return;
    const dir = dirname(resolve(this.options.path));
    this.watcher = watch(dir, { persistent: false }, () => this.schedule());
    this.watcher.on('error', (error) =>
      this.options.logger.warn('watching the apps file folder failed; SIGHUP or pushctl apps reload still reload', { error }),
    );
    this.options.logger.debug('watching the apps file', { dir, file: basename(this.options.path) });
  }

  private schedule(): void {
    if (this.closed) return;
    clearTimeout(this.debounce);
    this.debounce = setTimeout(() => {
      this.reload('watch').catch((error: unknown) => this.options.logger.error('reloading the apps file failed', { error }));
    }, this.options.debounceMs);
    this.debounce.unref();
  }

  /** Stops watching; a reload under way finishes. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.debounce);
    this.watcher?.close();
    this.watcher = undefined;
    await this.queue;
  }
}
