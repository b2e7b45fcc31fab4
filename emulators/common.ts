import { randomBytes } from 'node:crypto';
import type { Server } from 'node:https';
import { closeServer, postCallback, startHttpsServer, type Route } from './https-server.ts';
import type { Vendor } from '../processors/fan-out/vendor-port.ts';
import type { TestTls } from './tls.ts';

/**
 * The vendor clock of an emulator: real time plus an offset tests can advance, so credential
 * lifetimes (APNs 1 h, Google 1 h, HMS 1 h, OPPO/vivo 24 h) can be crossed without waiting.
 */
export class EmulatorClock {
  private offsetMs = 0;
  now(): number {
    return Date.now() + this.offsetMs;
  }
  advance(ms: number): void {
    this.offsetMs += ms;
  }
}

/**
 * A scripted misbehaviour, in vendor-neutral terms; each emulator answers it with that vendor's
 * documented status and body. `code` answers with one exact vendor code (APNs reason, FCM
 * errorCode, HMS/Xiaomi/OPPO/vivo business code); `variant` picks a documented shape where a code
 * has several (e.g. FCM INVALID_ARGUMENT `token` | `ttl`, a 429 `no-detail`).
 */
export type Fault =
  | { readonly kind: 'dead-token' }
  | { readonly kind: 'rate-limit'; readonly retryAfterS?: number }
  | { readonly kind: 'server-error'; readonly retryAfterS?: number }
  | { readonly kind: 'quota' }
  | { readonly kind: 'expired-auth' }
  /** APNs: GOAWAY on the connection carrying this stream; the stream is refused, unanswered. */
  | { readonly kind: 'goaway' }
  | { readonly kind: 'code'; readonly code: string; readonly variant?: string };

/**
 * A scripted fault of the connection rather than of the vendor's answer, the same for every
 * vendor (HTTP/1.1 and APNs' HTTP/2):
 * - `reset`: the TCP connection carrying the request is reset (RST, no GOAWAY, no FIN). With
 *   `after`, the push is processed (accepted and recorded) first and only the answer is lost.
 * - `stall`: the request is never answered; the connection stays up (PINGs are still answered).
 *   With `after`, the push is processed first.
 * - `late`: the push is processed and its answer sent `delayMs` later (after the client gave up).
 */
export type ConnectionFault =
  | { readonly kind: 'reset'; readonly after?: boolean }
  | { readonly kind: 'stall'; readonly after?: boolean }
  | { readonly kind: 'late'; readonly delayMs: number };

export interface FaultRule {
  readonly fault: Fault;
  /** Only requests carrying this token; all requests when absent. */
  readonly token?: string;
  /** How many more requests it applies to. */
  remaining: number;
}

/** One push an emulator accepted or refused, as a test would assert on it. */
export interface ReceivedPush {
  readonly vendor: Vendor;
  /** The emulator's app the credentials belonged to. */
  readonly appId: string;
  readonly token: string;
  readonly title?: string | undefined;
  readonly body?: string | undefined;
  /** The vendor's collapse / notify id as sent (apns-collapse-id, android.collapse_key, notify_id, ...). */
  readonly collapseId?: string | undefined;
  /** Custom data as sent (parsed). */
  readonly data?: unknown;
  /** The whole vendor request (headers or parsed body). */
  readonly request: unknown;
  /** What the emulator answered: `accepted` or the vendor code. */
  readonly answer: string;
  readonly at: number;
  /** The request's User-Agent: which client process sent it (sinks/vendors/http.ts VENDOR_USER_AGENT). */
  readonly client?: string | undefined;
}

/** Receipt simulation: where and how an emulator posts callbacks for what it accepted. */
export interface ReceiptBehaviour {
  /** Where to post (vendors with per-message callback URLs use the message's URL first). */
  url?: string | undefined;
  /** Delay before posting, ms. Default 50. */
  delayMs: number;
  /**
   * Receipts due within this many ms of the first go out in one callback (at most 100 entries each), as
   * vendors batch them (HMS up to 100 statuses a request, MiPush about once a second). Default 100.
   */
  batchMs: number;
  /** Probability a receipt is never sent. Default 0. */
  lossRate: number;
  /** Probability a receipt is posted twice. Default 0. */
  duplicateRate: number;
  /** What each token's receipt says. Default: dead tokens `dead-token`, others `delivered`. */
  outcomeFor?: ((token: string) => 'delivered' | 'failed' | 'dead-token') | undefined;
}

/** Receipts in one vendor callback at most (HMS documents up to 100 statuses a request). */
const MAX_RECEIPTS_PER_CALLBACK = 100;

/** One callback's way out: receipts with the same key go in one body, which `post` builds and sends. */
export interface ReceiptBatch<E> {
  readonly key: string;
  post(entries: E[]): Promise<void>;
}

/** One receipt: its callback, and its entry in the body, built when the callback is. */
export interface Receipt<E> {
  readonly batch: ReceiptBatch<E>;
  readonly entry: () => E;
}

/**
 * Callbacks to `url` whose JSON is keyed by message id (MiPush, vivo): each entry's pairs go into one
 * object until a key repeats, which starts the next callback (a duplicated receipt is a callback of
 * its own). `encode` turns an object into the request body of `contentType`.
 */
export function keyedReceiptBatch(
  url: string,
  contentType: string,
  encode: (body: Record<string, VendorJson>) => string,
): ReceiptBatch<Array<[string, VendorJson]>> {
  return {
    key: url,
    post: async (entries) => {
      let body: Record<string, VendorJson> | undefined;
      const bodies: Array<Record<string, VendorJson>> = [];
      for (const [key, value] of entries.flat()) {
        if (!body || key in body) bodies.push((body = {}));
        body[key] = value;
      }
      for (const b of bodies) await postCallback(url, { 'content-type': contentType }, encode(b));
    },
  };
}

/** State and knobs every emulator has. */
export class EmulatorCore {
  /** Replaceable so that startEmulators can give every emulator one shared clock. */
  clock = new EmulatorClock();
  readonly received: ReceivedPush[] = [];
  /** Pushes accepted since the last reset, whatever `received` has kept of them (a vendor's day count). */
  acceptedCount = 0;
  /** Tokens the vendor considers unregistered / invalid. */
  readonly deadTokens = new Set<string>();
  /** Latency added to every send answer, ms. */
  latencyMs = 0;
  readonly receipts: ReceiptBehaviour = { delayMs: 50, batchMs: 100, lossRate: 0, duplicateRate: 0 };
  /** Receipts posted (after loss; a duplicated one counts twice), for tests. */
  receiptsPosted = 0;
  /**
   * Requests made to the vendor's send endpoints, whatever their answer (credential endpoints not
   * counted): what the vendor bills and rate-limits. A vivo list push is two (saveListPayload and
   * pushToList), an HMS, Xiaomi or OPPO batch one, an APNs stream one.
   */
  sendRequests = 0;
  /**
   * Per-device daily cap of the vendor's limited class (HMS marketing 2, OPPO content & marketing 2,
   * vivo operation 5); pushes beyond it are taken but never shown (answer `class-capped`, failed
   * receipt). IM-class pushes are not counted. 0 turns the cap off.
   */
  limitedClassCapPerDevice = 0;
  private readonly limitedClassCounts = new Map<string, number>();
  private rules: FaultRule[] = [];
  private connectionRules: Array<{ fault: ConnectionFault; token?: string; remaining: number }> = [];
  /** Connection faults applied so far. */
  connectionFaults = 0;
  private readonly lastReceipt = new Map<string, Receipt<unknown>>();
  /** Receipts due and waiting for their callback, by callback (ReceiptBatch.key). */
  private readonly outbox = new Map<string, { batch: ReceiptBatch<unknown>; entries: Array<() => unknown> }>();
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(readonly vendor: Vendor) {}

  /** Adds a fault for the next `times` requests (default: every request), optionally for one token. */
  script(fault: Fault, options: { token?: string; times?: number } = {}): void {
    this.rules.push({ fault, ...(options.token === undefined ? {} : { token: options.token }), remaining: options.times ?? Infinity });
  }

  /** Adds a connection fault for the next `times` send requests (default: every one), optionally for one token. */
  scriptConnection(fault: ConnectionFault, options: { token?: string; times?: number } = {}): void {
    this.connectionRules.push({ fault, ...(options.token === undefined ? {} : { token: options.token }), remaining: options.times ?? Infinity });
  }

  /** The connection fault that applies to a send request carrying `tokens` (consumed), if any. */
  takeConnectionFault(tokens: readonly string[]): ConnectionFault | undefined {
    const rule = this.connectionRules.find((r) => r.remaining > 0 && (r.token === undefined || tokens.includes(r.token)));
    if (!rule) return undefined;
    rule.remaining--;
    this.connectionFaults++;
    return rule.fault;
  }

  /** Removes the scripted faults only (ends a storm). */
  clearFaults(): void {
    this.rules = [];
    this.connectionRules = [];
  }

  /** Removes all scripted faults, dead tokens and recordings. */
  reset(): void {
    this.rules = [];
    this.connectionRules = [];
    this.connectionFaults = 0;
    this.deadTokens.clear();
    this.received.length = 0;
    this.acceptedCount = 0;
    this.latencyMs = 0;
    this.receiptsPosted = 0;
    this.sendRequests = 0;
    this.limitedClassCounts.clear();
  }

  /**
   * Forgets the recordings made in [fromMs, untilMs) by the emulator's clock, nothing else (a
   * "vendor lost them" drill: dead tokens, faults and later recordings stay). Returns how many.
   */
  forget(fromMs: number, untilMs: number): number {
    const kept = this.received.filter((r) => r.at < fromMs || r.at >= untilMs);
    const forgotten = this.received.length - kept.length;
    this.received.length = 0;
    for (const r of kept) this.received.push(r);
    return forgotten;
  }

  /** The fault that applies to a request carrying `tokens` (consumed), if any. */
  takeFault(tokens: readonly string[]): Fault | undefined {
    const rule = this.rules.find((r) => r.remaining > 0 && (r.token === undefined || tokens.includes(r.token)));
    if (!rule) return undefined;
    rule.remaining--;
    return rule.fault;
  }

  record(push: Omit<ReceivedPush, 'vendor' | 'at'>): void {
    if (push.answer === 'accepted') this.acceptedCount++;
    this.received.push({ vendor: this.vendor, at: this.clock.now(), ...push });
  }

  /** Pushes this emulator accepted (what reached the "device"). */
  accepted(): ReceivedPush[] {
    return this.received.filter((r) => r.answer === 'accepted');
  }

  receiptOutcome(token: string): 'delivered' | 'failed' | 'dead-token' {
    return this.receipts.outcomeFor?.(token) ?? (this.deadTokens.has(token) ? 'dead-token' : 'delivered');
  }

  /**
   * Posts a receipt later, with the configured delay, loss and duplication: when due it waits up
   * to `batchMs` for others of the same callback and goes out with them. The entry is built when
   * the callback is, so it says what the token's state is then. A duplicate is due a batch later.
   */
  scheduleReceipt<E>(receipt: Receipt<E>): void {
    if (Math.random() < this.receipts.lossRate) return;
    const copies = Math.random() < this.receipts.duplicateRate ? 2 : 1;
    for (let i = 0; i < copies; i++) {
      const timer = setTimeout(
        () => {
          this.timers.delete(timer);
          this.receiptsPosted++;
          this.queueReceipt(receipt as Receipt<unknown>);
        },
        this.receipts.delayMs + i * (this.receipts.batchMs + 10),
      );
      this.timers.add(timer);
    }
  }

  private queueReceipt(receipt: Receipt<unknown>): void {
    const waiting = this.outbox.get(receipt.batch.key);
    if (waiting) {
      waiting.entries.push(receipt.entry);
      return;
    }
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      const due = this.outbox.get(receipt.batch.key)!;
      this.outbox.delete(receipt.batch.key);
      for (let i = 0; i < due.entries.length; i += MAX_RECEIPTS_PER_CALLBACK) {
        const entries = due.entries.slice(i, i + MAX_RECEIPTS_PER_CALLBACK).map((entry) => entry());
        // A vendor does not retry a callback the receiver refused or could not be reached for: the receipts are lost, as tests of receipt loss expect.
        due.batch.post(entries).catch(() => undefined);
      }
    }, this.receipts.batchMs);
    this.timers.add(timer);
    this.outbox.set(receipt.batch.key, { batch: receipt.batch, entries: [receipt.entry] });
  }

  /** Counts a limited-class push to `token`; true when it is over today's per-device cap. */
  protected overLimitedClassCap(token: string): boolean {
    if (this.limitedClassCapPerDevice <= 0) return false;
    const key = `${Math.floor(this.clock.now() / 86_400_000)}|${token}`;
    const n = (this.limitedClassCounts.get(key) ?? 0) + 1;
    this.limitedClassCounts.set(key, n);
    return n > this.limitedClassCapPerDevice;
  }

  /** Remembers how to post a receipt about the last push accepted for `token` (see `uninstall`). */
  protected rememberReceipt<E>(token: string, receipt: Receipt<E>): void {
    this.lastReceipt.set(token, receipt as Receipt<unknown>);
  }

  /**
   * The device uninstalled the app: the token is dead from now on, and vendors with receipts post
   * (asynchronously, with the configured delay) a dead-token receipt about its last push.
   * Returns whether a receipt was scheduled.
   */
  uninstall(token: string): boolean {
    this.deadTokens.add(token);
    const receipt = this.lastReceipt.get(token);
    if (!receipt) return false;
    this.scheduleReceipt(receipt);
    return true;
  }

  stopTimers(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.outbox.clear();
  }
}

/** What a restart needs of an emulator. */
export interface RestartableEmulator {
  start(tls: TestTls, port: number): Promise<string>;
  close(): Promise<void>;
  readonly baseUrl: string;
}

/** How startEmulators (index.ts) makes a vendor's emulator and registers the apps with it. */
export interface EmulatorSetup<E extends EmulatorCore & RestartableEmulator> {
  create(): E;
  /**
   * Registers generated credentials for each of `appIds` with the started emulator and returns each
   * app's entry of the apps file, in order, without the fields every vendor takes (base URL,
   * limits). `receiptUrl` is where its receipts go: the URL "configured in the vendor's console" (the
   * emulator's), or the app's `receiptUrl` that travels with each message.
   */
  register(emulator: E, appIds: readonly string[], receiptUrl: string | undefined): Array<Record<string, unknown>>;
  /** A device token in the vendor's format (default `<vendor>-<seed>`). */
  token?(seed: string): string;
}

/** A generated credential secret. */
export const randomSecret = () => randomBytes(12).toString('hex');

/** A generated key in PEM. */
export const pemOf = (k: { export(o: { format: 'pem'; type: 'pkcs8' | 'spki' }): string | Buffer }, type: 'pkcs8' | 'spki') =>
  k.export({ format: 'pem', type }).toString();

/**
 * A vendor server restart: every connection is dropped, the port refuses connections for
 * `downMs`, then the server listens again on the same port (registered apps and credentials kept).
 */
export async function restartEmulator(emulator: RestartableEmulator, tls: TestTls, downMs: number, hooks: RestartHooks = {}): Promise<void> {
  const port = Number(new URL(emulator.baseUrl).port);
  await emulator.close();
  hooks.down?.();
  await sleep(downMs);
  hooks.up?.();
  await emulator.start(tls, port);
}

/** Called when the server has gone down and just before it listens again (tests count reconnects in between). */
export interface RestartHooks {
  down?(): void;
  up?(): void;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export const randomId = (prefix = '') => `${prefix}${Date.now().toString(36)}${Math.random().toString(36).slice(2, 10)}`;

/**
 * How the Chinese vendors count the characters of a title or body (docs/vendors.md, "Payload
 * limits"). Written from the vendors' documents, apart from the adapters' builders, so that a
 * builder that counts wrong is refused here.
 */
export const vendorCharCount = {
  /**
   * Xiaomi, OPPO: "a Chinese or English character counts one" (OPPO adds "and emoji"), unit not
   * documented: the stricter of UTF-16 units and UTF-8 bytes / 3.
   */
  oneEach(text: string): number {
    return Math.max(text.length, Math.ceil(Buffer.byteLength(text, 'utf8') / 3));
  },
  /** vivo: "one Chinese character equals two English characters"; anything not ASCII counts as Chinese, per UTF-16 unit. */
  chineseTwo(text: string): number {
    let n = 0;
    for (const unit of text.split('')) n += unit.charCodeAt(0) <= 0x7f ? 1 : 2;
    return n;
  },
};

/** Parsed vendor JSON, read field by field the way each vendor documents it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type VendorJson = Record<string, any>;

/**
 * An emulator served over HTTPS/1.1 (every vendor but APNs, which speaks HTTP/2): the base owns the
 * server's start and close; a vendor maps request paths to its handlers in `route`.
 */
export abstract class HttpsEmulator extends EmulatorCore {
  private server: Server | undefined;
  baseUrl = '';

  /** The handler of a request path, or undefined (answered 404). */
  protected abstract route(path: string): Route | undefined;

  async start(tls: TestTls, port = 0): Promise<string> {
    const { server, baseUrl } = await startHttpsServer(tls, port, (path) => this.route(path));
    this.server = server;
    this.baseUrl = baseUrl;
    return baseUrl;
  }

  async close(): Promise<void> {
    this.stopTimers();
    if (this.server) await closeServer(this.server);
  }
}
