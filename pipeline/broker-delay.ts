/**
 * The delay signal the campaign expansion yields to (processors/campaigns/pace.ts): every
 * `intervalMs` a thread of its own (broker-delay-thread.mjs) asks the brokers leading a topic of
 * IM's event path (push.dispatch, which every IM push crosses) for its end offsets, and once a
 * period hands the median round trip of the period's requests to `onPeriod`, with whether the end
 * offsets moved (IM pushes were under way: the delay may be theirs to suffer). The round trip grows
 * when the brokers' request queues grow and when the machine's CPU is taken by busier work than
 * this process's (a niced worker waits for it); the thread's own event loop keeps the worker's
 * processing out of the figure. A period in which a request failed reports no delay (null) and IM
 * as under way: a broker that cannot answer is no reason to speed up. One request in flight at a time.
 * A thread that ends before `close` (an error in it) counts as a failed period and is started again
 * a period later, so the expansion never goes on at the share of a probe that stopped. It asks every
 * `intervalMs` only while a campaign is being expanded (`expanding`), once a period otherwise: an
 * idle worker keeps learning the base delay without waking several times a second for it.
 */
import { Worker } from 'node:worker_threads';
import type { KafkaSecurity } from '../common/kafka-client.ts';
import type { Logger } from '../common/log.ts';

export interface BrokerDelayProbeOptions {
  readonly brokers: readonly string[];
  /** TLS and SASL, as the worker's own clients (plain data, handed to the thread as it is). Default plain text. */
  readonly kafkaSecurity?: KafkaSecurity;
  readonly topic: string;
  /** Between requests, ms. Default 200. */
  readonly intervalMs?: number;
  /** One sample per period, ms. Default 1 000. */
  readonly periodMs?: number;
  /**
   * The period's median round trip, ms (null: a request failed in it), when the period ended
   * (epoch ms), and whether the topic's end offsets moved in it (or a request failed).
   */
  readonly onPeriod: (delayMs: number | null, now: number, active: boolean) => void;
  readonly logger?: Logger;
  /** The thread's script; default broker-delay-thread.mjs beside this file (tests give one that fails). */
  readonly threadUrl?: URL;
}

type ProbeMessage = { type: 'period'; delayMs: number | null; now: number; active: boolean } | { type: 'failed'; error: string } | { type: 'answered' };

export class BrokerDelayProbe {
  private thread: Worker | undefined;
  private exited: Promise<void> | undefined;
  private closing = false;
  private restart: NodeJS.Timeout | undefined;
  private toldExpandingMs = 0;

  constructor(private readonly options: BrokerDelayProbeOptions) {}

  start(): void {
    if (this.thread || this.closing) return;
    const o = this.options;
    const periodMs = o.periodMs ?? 1_000;
    const thread = new Worker(o.threadUrl ?? new URL('./broker-delay-thread.mjs', import.meta.url), {
      workerData: { brokers: [...o.brokers], kafkaSecurity: o.kafkaSecurity, topic: o.topic, intervalMs: o.intervalMs ?? 200, periodMs },
    });
    thread.on('message', (m: ProbeMessage) => {
      if (m.type === 'period') o.onPeriod(m.delayMs, m.now, m.active);
      else if (m.type === 'failed') o.logger?.warn('broker delay probe failed; the campaign expansion yields until it answers', { error: m.error });
      else o.logger?.info('broker delay probe answered again');
    });
    // An error ends the thread: it is logged once, with the exit.
    let error: string | undefined;
    thread.on('error', (e) => (error = e.message));
    thread.unref();
    this.exited = new Promise((resolve) =>
      thread.once('exit', (code) => {
        resolve();
        if (this.closing) {
          if (error !== undefined) o.logger?.warn('broker delay probe thread ended while closing', { code, error });
          return;
        }
        this.thread = undefined;
        o.logger?.warn('broker delay probe thread ended; the campaign expansion yields until it is started again', { code, error });
        o.onPeriod(null, Date.now(), true);
        this.restart = setTimeout(() => this.start(), periodMs).unref();
      }),
    );
    this.thread = thread;
  }

  /** A campaign is being expanded: the thread asks every `intervalMs` for the next two periods. Tells it at most once a period. */
  expanding(): void {
    const now = Date.now();
    if (!this.thread || now - this.toldExpandingMs < (this.options.periodMs ?? 1_000)) return;
    this.toldExpandingMs = now;
    this.thread.postMessage('expanding');
  }

  /** Stops the thread after its request in flight (at most a few seconds). */
  async close(): Promise<void> {
    this.closing = true;
    clearTimeout(this.restart);
    if (!this.thread) return;
    this.thread.postMessage('stop');
    const timeout = setTimeout(() => void this.thread?.terminate(), 5_000);
    await this.exited;
    clearTimeout(timeout);
  }
}
