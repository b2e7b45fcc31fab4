import type { Logger } from '../../common/log.ts';
import { VENDORS, type Vendor } from '../../processors/fan-out/vendor-port.ts';
import type { Gauge } from '../metrics/prometheus.ts';
import type { AppsConfig } from './apps-config.ts';
import { vendorModule } from './modules.ts';
import type { CredentialExpiry } from './module.ts';
import type { VendorCommon } from './vendor-config.ts';

const DAY_MS = 86_400_000;

/** One credential of one app that carries an expiry. */
interface Watched extends CredentialExpiry {
  readonly app: string;
  readonly vendor: Vendor;
}

export interface CredentialExpiryOptions {
  /** push_credential_expiry_seconds{app, vendor, credential}. */
  readonly gauge: Gauge;
  readonly logger: Logger;
  /** Credentials expiring within this many days are logged (PUSH_CREDENTIAL_EXPIRY_WARN_DAYS). */
  readonly warnDays: number;
  /** Epoch ms. Default Date.now. */
  readonly now?: () => number;
  /** How often the warning is logged again, ms. Default a day. */
  readonly repeatMs?: number;
}

/**
 * The expiry of the apps file's credentials that carry one (each vendor module's
 * `credentialExpiries`: an APNs provider certificate's notAfter; FCM service-account JSON, HMS, Xiaomi,
 * OPPO and vivo secrets carry none). The gauge shows the seconds left at each scrape; a credential
 * within `warnDays` of its expiry is logged when it comes into force (start, reload) and daily:
 * app, vendor, kind and expiry time, never the credential itself.
 */
export class CredentialExpiryWatch {
  private watched: Watched[] = [];
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: CredentialExpiryOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Watches the credentials of `config` from now on (replacing those of the previous version) and logs those near their expiry. */
  watch(config: AppsConfig): void {
    this.watched = config.apps.flatMap((app) =>
      VENDORS.flatMap((vendor) => {
        const c: VendorCommon | undefined = app.vendors[vendor];
        return c === undefined
          ? []
          : vendorModule(vendor)
              .credentialExpiries(c)
              .map((e) => ({ app: app.appId, vendor, ...e }));
      }),
    );
    this.collect();
    this.warn();
  }

  /** Sets the gauge to the seconds left of every watched credential (a removed app's series go away). */
  collect(): void {
    const { gauge } = this.options;
    gauge.clear();
    const now = this.now();
    for (const w of this.watched) gauge.set({ app: w.app, vendor: w.vendor, credential: w.credential }, Math.round((w.expiresAtMs - now) / 1000));
  }

  /** Logs every watched credential that is expired or within the threshold. */
  warn(): void {
    const now = this.now();
    for (const w of this.watched) {
      const leftMs = w.expiresAtMs - now;
      if (leftMs > this.options.warnDays * DAY_MS) continue;
      // `kind`, not `credential`: the logger redacts fields named like secrets.
      const fields = {
        app: w.app,
        vendor: w.vendor,
        kind: w.credential,
        expiresAt: new Date(w.expiresAtMs).toISOString(),
        daysLeft: Math.floor(leftMs / DAY_MS),
      };
      if (leftMs <= 0) this.options.logger.error('vendor credential expired: pushes through it are refused', fields);
      else this.options.logger.warn('vendor credential expires soon: renew it and reload the apps file', fields);
    }
  }

  /** Logs the warning again every day (or `repeatMs`) until stopped. */
  start(): void {
    this.timer ??= setInterval(() => this.warn(), this.options.repeatMs ?? DAY_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
