import { backoffDelay } from '../../common/retry.ts';

/** Options of a reconnect backoff (one per vendor origin). */
export interface ReconnectOptions {
  /** New connections one backoff step may open: the pool size. At least 1. */
  readonly perStep: number;
  /** Base delay before the first step after a failed connection, ms (doubles per step, jittered to [base/2, base]). Default 250. */
  readonly initialDelayMs?: number;
  /** Upper bound of the base delay, ms. Default 30 000. */
  readonly maxDelayMs?: number;
  /** Monotonic clock, ms. Default performance.now. */
  readonly now?: () => number;
}

/** A permit to open one connection, tied to the backoff step it was given in. */
export interface ConnectTicket {
  readonly step: number;
}

/**
 * Paces new connections to one vendor origin. While connections succeed nothing waits. After a
 * connection fails, the next ones wait out a jittered exponential delay, and each step then opens
 * at most `perStep` connections; a step whose connections fail too starts the next, longer
 * step. One success (from any step) ends the backoff. So a vendor that is down sees at most the
 * pool size of new connections per step, not one per retried request.
 */
export class ReconnectBackoff {
  private readonly perStep: number;
  private readonly initialDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly now: () => number;
  private step = 0;
  private failures = 0;
  private opensAt = 0;
  private openedThisStep = 0;
  /** Connections attempted so far (for tests and metrics). */
  attempts = 0;

  constructor(options: ReconnectOptions) {
    this.perStep = Math.max(1, options.perStep);
    this.initialDelayMs = options.initialDelayMs ?? 250;
    this.maxDelayMs = options.maxDelayMs ?? 30_000;
    this.now = options.now ?? (() => performance.now());
  }

  /** Consecutive failed steps (0: healthy). */
  get failedSteps(): number {
    return this.failures;
  }

  /** A permit to open a connection now, or undefined while backing off or the step's budget is spent. */
  tryOpen(): ConnectTicket | undefined {
    if (this.waitMs() > 0) return undefined;
    this.openedThisStep++;
    this.attempts++;
    return { step: this.step };
  }

  /**
   * How long until the current backoff step opens, ms (0: healthy, or the step is open). While it
   * is not open no call should be tried; once open, calls may queue behind the step's connections.
   */
  delayMs(): number {
    return this.failures === 0 ? 0 : Math.max(0, Math.ceil(this.opensAt - this.now()));
  }

  /** How long until a new connection may be opened, ms (0: now). */
  waitMs(): number {
    if (this.failures === 0) return 0;
    const wait = this.delayMs();
    if (wait > 0) return wait;
    // The step's connections are all under way: the next step starts when they fail.
    return this.openedThisStep >= this.perStep ? Math.max(1, Math.round(this.initialDelayMs / 2)) : 0;
  }

  /** The connection of `ticket` is up: the vendor is reachable again. */
  succeeded(_ticket: ConnectTicket): void {
    if (this.failures === 0) return;
    this.failures = 0;
    this.step++;
    this.openedThisStep = 0;
    this.opensAt = 0;
  }

  /** The connection of `ticket` failed. Only the first failure of a step starts the next step. */
  failed(ticket: ConnectTicket): void {
    if (ticket.step !== this.step) return;
    this.failures++;
    this.step++;
    this.openedThisStep = 0;
    this.opensAt = this.now() + backoffDelay(this.failures, this.initialDelayMs, this.maxDelayMs);
  }
}
