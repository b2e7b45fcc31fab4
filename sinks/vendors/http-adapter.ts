/**
 * What the adapters of the HTTPS vendors (FCM, HMS, Xiaomi, OPPO, vivo) share: one VendorHttp
 * client per (app, vendor) and the clock, and the call made with a cached credential that is
 * minted again once when the vendor refuses it (docs/vendors.md).
 */
import type { VendorCommon } from './vendor-config.ts';
import { groupByPayload } from './batching.ts';
import { CachedCredential, type MintedCredential } from './credential.ts';
import { beforeDeadline, deadlineAfter, NetworkError, VendorHttp, type HttpAnswer } from './http.ts';
import { noAnswer } from './outcomes.ts';
import type { PushMessage, SubmitOutcome } from '../../processors/fan-out/vendor-port.ts';

export interface HttpAdapterDeps {
  readonly ca?: string | undefined;
  readonly now?: () => number;
}

export abstract class HttpVendorAdapter {
  protected readonly http: VendorHttp;
  protected readonly now: () => number;
  private readonly timeoutMs: number;

  constructor(config: VendorCommon, deps: HttpAdapterDeps) {
    this.now = deps.now ?? Date.now;
    this.timeoutMs = config.timeoutMs;
    this.http = new VendorHttp({ ca: deps.ca, connections: config.connections, timeoutMs: config.timeoutMs });
  }

  /** Connections attempted so far, reconnects included (for tests and metrics). */
  get connectionsOpened(): number {
    return this.http.connectionsOpened;
  }

  close(): Promise<void> {
    return this.http.close();
  }

  /**
   * A submit of the vendors that send one message to many tokens: `messages` go as groupByPayload's
   * requests of at most `maxTokens`, all at once and all within the app's timeout, each by `send`
   * (one outcome per message of its group, in order); the outcomes come back in the order of `messages`.
   */
  protected async submitGrouped(
    messages: readonly PushMessage[],
    payloadKey: (m: PushMessage) => string,
    maxTokens: number,
    send: (group: readonly PushMessage[], deadline: number) => Promise<readonly SubmitOutcome[]>,
  ): Promise<SubmitOutcome[]> {
    const deadline = deadlineAfter(this.timeoutMs);
    const outcomes: SubmitOutcome[] = new Array(messages.length);
    await Promise.all(
      groupByPayload(messages, payloadKey, maxTokens).map(async (indices) => {
        const results = await send(
          indices.map((i) => messages[i]!),
          deadline,
        );
        indices.forEach((i, k) => (outcomes[i] = results[k]!));
      }),
    );
    return outcomes;
  }
}

/** A credential endpoint's refusal (OAuth, OPPO or vivo auth): the push fails as auth-failed with its code. */
export class CredentialRefused extends Error {
  constructor(
    endpoint: string,
    readonly code: string,
  ) {
    super(`${endpoint} refused: ${code}`);
  }
}

/** What `read` returns when the vendor refused the credential: it is dropped, minted again and the call made once more. */
export const REFRESH = Symbol('refresh the credential');

/** The answer to a call, or the outcome of a call that got none (it may have been written or not). */
export async function answerOf(call: Promise<HttpAnswer>): Promise<HttpAnswer | SubmitOutcome> {
  try {
    return await call;
  } catch (error) {
    if (error instanceof NetworkError) return noAnswer(error.written, error.retryAfterMs);
    throw error;
  }
}

/**
 * An HTTPS adapter whose calls carry a credential minted from the app's secrets (an OAuth bearer,
 * OPPO's auth_token, vivo's authToken), cached until `refreshBeforeMs` before it expires.
 */
export abstract class CredentialedHttpAdapter extends HttpVendorAdapter {
  private readonly credential: CachedCredential;

  constructor(config: VendorCommon, deps: HttpAdapterDeps, refreshBeforeMs: number) {
    super(config, deps);
    this.credential = new CachedCredential(() => this.mintCredential(), refreshBeforeMs, this.now);
  }

  /** Asks the vendor for a new credential; throws CredentialRefused when it says no. */
  protected abstract mintCredential(): Promise<MintedCredential>;

  /**
   * One vendor call with the credential. It is awaited within `deadline`: refused by its endpoint,
   * the call is auth-failed; not there in time, the call is not sent. `read` turns the answer into
   * the caller's result, or, while `mayRefresh` (the first answer only), into REFRESH.
   */
  protected async callWithCredential<T>(
    deadline: number,
    post: (credential: string) => Promise<HttpAnswer>,
    read: (answer: HttpAnswer, mayRefresh: boolean) => T | typeof REFRESH,
  ): Promise<T | SubmitOutcome> {
    for (let mayRefresh = true; ; mayRefresh = false) {
      let value: string;
      try {
        value = await beforeDeadline(this.credential.get(), deadline);
      } catch (error) {
        if (error instanceof CredentialRefused) return { kind: 'auth-failed', code: error.code };
        return noAnswer(false, error instanceof NetworkError ? error.retryAfterMs : undefined);
      }
      const answer = await answerOf(post(value));
      if ('kind' in answer) return answer;
      const result = read(answer, mayRefresh);
      if (result !== REFRESH) return result;
      this.credential.invalidate(value);
    }
  }
}
