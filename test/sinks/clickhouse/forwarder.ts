import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A plain TCP forwarder to the stack's ClickHouse, so a test can make ClickHouse unreachable for a
 * writer (close the forwarder) without stopping the shared server.
 */
export interface Forwarder {
  close(): Promise<void>;
}

/** Starts forwarding 127.0.0.1:`port` to `target` (an http:// URL). */
export async function startForwarder(port: number, target: URL): Promise<Forwarder> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port || 80), target.hostname);
    sockets.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return {
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
