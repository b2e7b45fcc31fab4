import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { ConnectionRefusal } from './metrics.ts';

export interface ConnectionLimits {
  /** Open connections in all; a connection over it is closed at once. */
  readonly maxConnections: number;
  /** Open connections per remote address. */
  readonly maxConnectionsPerClient: number;
  /** Requests per remote address and second (token bucket of one second's worth). */
  readonly clientRequestsPerSecond: number;
  /** From a connection's opening, or its previous answer, to the end of the next request's headers, ms. */
  readonly headersTimeoutMs: number;
}

/** Remote addresses whose request rate is tracked at most; the least recently seen are forgotten first. */
const MAX_TRACKED_CLIENTS = 10_000;

/**
 * Admission before any request is parsed: connection caps (total and per remote address), a
 * headers deadline per connection that a slow client cannot extend by trickling bytes (Node's own
 * `headersTimeout` is checked only every `connectionsCheckingInterval`), and a per-client request
 * rate. All of it is synchronous bookkeeping on plain maps; nothing here reads a body.
 */
export class ConnectionGuard {
  private open = 0;
  private readonly perClient = new Map<string, number>();
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly deadlines = new WeakMap<Socket, NodeJS.Timeout>();

  constructor(
    private readonly limits: ConnectionLimits,
    private readonly onRefused: (reason: ConnectionRefusal) => void = () => undefined,
    private readonly now: () => number = Date.now,
  ) {}

  /** Installs the guard on `server` (before it listens). */
  attach(server: Server): void {
    server.on('connection', (socket: Socket) => this.admit(socket));
  }

  /** Open connections now (for tests and status). */
  get openConnections(): number {
    return this.open;
  }

  /** A request's headers are in: its connection's headers deadline no longer applies. */
  requestStarted(socket: Socket): void {
    clearTimeout(this.deadlines.get(socket));
  }

  /** The answer went out on a connection that stays open: the next request's headers are due in time again. */
  requestDone(socket: Socket): void {
    if (!socket.destroyed) this.armDeadline(socket);
  }

  /** Takes one request from the client's bucket; false when the client is over its rate. */
  allowRequest(client: string): boolean {
    const now = this.now();
    const rate = this.limits.clientRequestsPerSecond;
    let bucket = this.buckets.get(client);
    if (bucket)
      this.buckets.delete(client); // re-inserted below: map order is recency order
    else {
      if (this.buckets.size >= MAX_TRACKED_CLIENTS) this.buckets.delete(this.buckets.keys().next().value!);
      bucket = { tokens: rate, at: now };
    }
    bucket.tokens = Math.min(rate, bucket.tokens + ((now - bucket.at) * rate) / 1000);
    bucket.at = now;
    this.buckets.set(client, bucket);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  private admit(socket: Socket): void {
    const client = socket.remoteAddress ?? 'unknown';
    const count = this.perClient.get(client) ?? 0;
    const refusal: ConnectionRefusal | undefined =
      this.open >= this.limits.maxConnections ? 'max_connections' : count >= this.limits.maxConnectionsPerClient ? 'max_client_connections' : undefined;
    if (refusal) {
      this.onRefused(refusal);
      socket.destroy();
      return;
    }
    this.open++;
    this.perClient.set(client, count + 1);
    socket.once('close', () => {
      clearTimeout(this.deadlines.get(socket));
      this.open--;
      const left = (this.perClient.get(client) ?? 1) - 1;
      if (left <= 0) this.perClient.delete(client);
      else this.perClient.set(client, left);
    });
    this.armDeadline(socket);
  }

  private armDeadline(socket: Socket): void {
    clearTimeout(this.deadlines.get(socket));
    const timer = setTimeout(() => {
      this.onRefused('headers_timeout');
      socket.destroy();
    }, this.limits.headersTimeoutMs);
    timer.unref();
    this.deadlines.set(socket, timer);
  }
}
