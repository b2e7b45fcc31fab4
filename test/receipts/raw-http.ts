import { connect, type Socket } from 'node:net';

/** What came back on one raw connection, read until the server closed it (or `waitMs` passed). */
export interface RawAnswer {
  /** The status code, or 0 when the server closed without answering. */
  readonly status: number;
  /** Header lines (lower-cased names) except `date`, in the order sent. */
  readonly headers: readonly string[];
  readonly body: string;
  /** The server closed the connection (rather than the client giving up after `waitMs`). */
  readonly closedByServer: boolean;
}

export interface RawRequest {
  readonly port: number;
  /** The request line and headers, without the blank line that ends them. */
  readonly head: string;
  /** Bytes sent after the headers (may be less than the declared content-length: a stalled body). */
  readonly body?: string | Buffer;
  /** End the headers (the blank line). Default true; false leaves them unfinished. */
  readonly endHeaders?: boolean;
  /** A loopback source address, e.g. 127.0.0.2, to look like another client. Default 127.0.0.1. */
  readonly from?: string;
  /** Give up (and close) after this long, ms. Default 10 000. */
  readonly waitMs?: number;
}

/** Opens a loopback connection and writes `head` (and `body`), keeping the socket for the caller. */
export function openRaw(r: RawRequest): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: r.port, localAddress: r.from ?? '127.0.0.1' }, () => {
      socket.off('error', reject);
      socket.on('error', () => undefined); // a reset by the server shows to the caller as a closed socket (readRaw)
      socket.write(r.head + ((r.endHeaders ?? true) ? '\r\n\r\n' : '\r\n'));
      if (r.body !== undefined && r.body.length > 0) socket.write(r.body);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

/** Reads what `socket` receives until it closes or `waitMs` passes, and parses it as one HTTP answer. */
export function readRaw(socket: Socket, waitMs = 10_000): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let closedByServer = false;
    const timer = setTimeout(() => socket.destroy(), waitMs);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('end', () => {
      closedByServer = true;
      socket.destroy();
    });
    socket.on('close', (hadError) => {
      clearTimeout(timer);
      if (hadError) closedByServer = true; // reset by the server
      resolve(parseAnswer(Buffer.concat(chunks).toString('latin1'), closedByServer));
    });
  });
}

/** Sends one raw request and reads its answer. */
export async function rawRequest(r: RawRequest): Promise<RawAnswer> {
  return readRaw(await openRaw(r), r.waitMs);
}

function parseAnswer(text: string, closedByServer: boolean): RawAnswer {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return { status: 0, headers: [], body: '', closedByServer };
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine ?? '')?.[1] ?? 0);
  const headers = lines.map((l) => l.replace(/^([^:]+):/, (_m, name: string) => `${name.toLowerCase()}:`)).filter((l) => !l.startsWith('date:'));
  return { status, headers, body: text.slice(end + 4), closedByServer };
}

/** A POST head with a declared body length; `connection: close`, so the answer ends with the connection. */
export function postHead(path: string, contentLength: number, headers: Record<string, string> = {}): string {
  const lines = [
    `POST ${path} HTTP/1.1`,
    'host: 127.0.0.1',
    'connection: close',
    `content-length: ${contentLength}`,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  return lines.join('\r\n');
}
