import { Agent, request } from 'undici';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { ConnectionFault } from './common.ts';
import type { TestTls } from './tls.ts';

/**
 * The HTTPS side the vendor emulators share: the server and its routing, JSON answers, connection
 * faults on an exchange, and the receipt callbacks they post to a receiver.
 */

/** Resets (RST) the TCP connection under a TLS socket: the peer gets ECONNRESET, no close_notify, no GOAWAY. */
export function resetConnection(socket: Socket): void {
  const raw = (socket as Socket & { _parent?: Socket })._parent ?? socket;
  if (!raw.destroyed) raw.resetAndDestroy();
}

/**
 * Applies a connection fault to an HTTP/1.1 exchange the emulator is about to process. Returns
 * true when the request must not be processed (reset or stalled before); otherwise the vendor's
 * answer, once written, is lost (reset / stall after) or delayed (late).
 */
export function applyConnectionFault(fault: ConnectionFault, req: IncomingMessage, res: ServerResponse): boolean {
  if (fault.kind !== 'late' && !fault.after) {
    if (fault.kind === 'reset') resetConnection(req.socket);
    return true;
  }
  const writeHead = res.writeHead.bind(res);
  const end = res.end.bind(res);
  let head: Parameters<typeof res.writeHead> | undefined;
  res.writeHead = ((...args: Parameters<typeof res.writeHead>) => {
    head = args;
    return res;
  }) as typeof res.writeHead;
  res.end = ((...args: Parameters<typeof res.end>) => {
    if (fault.kind === 'reset') resetConnection(req.socket);
    else if (fault.kind === 'late') {
      setTimeout(() => {
        if (res.destroyed || req.socket.destroyed) return;
        if (head) writeHead(...head);
        end(...(args as unknown as [string]));
      }, fault.delayMs);
    }
    return res;
  }) as typeof res.end;
  return false;
}

export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** A string parsed as JSON where it is JSON, else as it came (the pushes' custom data, as recorded). */
export function tryJson(s: unknown): unknown {
  if (typeof s !== 'string') return s;
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json;charset=UTF-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

export type Route = (req: IncomingMessage, res: ServerResponse, body: string, url: URL) => Promise<void> | void;

/** An HTTPS server on 127.0.0.1 (port 0 = any) routing exact paths or path patterns. */
export async function startHttpsServer(tls: TestTls, port: number, route: (path: string) => Route | undefined): Promise<{ server: Server; baseUrl: string }> {
  const server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://127.0.0.1');
    const handler = route(url.pathname);
    readBody(req)
      .then((body) => (handler ? handler(req, res, body, url) : sendJson(res, 404, { error: 'not found' })))
      .catch((error: Error) => {
        if (!res.headersSent) sendJson(res, 500, { error: error.message });
        else res.destroy();
      });
  });
  server.keepAliveTimeout = 60_000;
  // Every accepted TCP connection, TLS handshake or not, so that close() can drop them all.
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  openSockets.set(server, sockets);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { server, baseUrl: `https://localhost:${(server.address() as AddressInfo).port}` };
}

const openSockets = new WeakMap<Server, Set<Socket>>();

/** Stops listening and drops every connection, including those still in their TLS handshake. */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
    for (const socket of openSockets.get(server) ?? []) socket.destroy();
  });
}

/**
 * Receipt callbacks leave on a few kept-alive connections per receiver, as a vendor's callback
 * service sends them: fewer than the receiver's per-client connection cap
 * (PUSH_RECEIPTS_MAX_CONNECTIONS_PER_CLIENT, default 64). A connection per concurrent callback
 * (fetch's default pool) went over the cap under load and the receiver closed the extra ones at once.
 */
const callbackAgent = new Agent({ connections: 16, keepAliveTimeout: 4_000 });

/** Posts a receipt callback to a receiver (http or https; the receiver's CA is the test CA or public). */
export async function postCallback(url: string, headers: Record<string, string>, body: string): Promise<void> {
  const res = await request(url, { method: 'POST', headers, body, dispatcher: callbackAgent });
  await res.body.dump();
}
