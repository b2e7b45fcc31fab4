import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { MetricsRegistry } from './prometheus.ts';

export interface HealthSource {
  /** The process is alive and not wedged (its event loop answers). */
  live(): boolean;
  /** Tasks are assigned and restored: the worker is processing. */
  ready(): boolean;
}

/**
 * Per-worker HTTP endpoints: `/metrics` (Prometheus text format), `/healthz` (liveness) and
 * `/readyz` (readiness: 503 until the worker's tasks are restored and running).
 */
export async function startMetricsServer(
  registry: MetricsRegistry,
  health: HealthSource,
  port: number,
  host = '127.0.0.1',
): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET') {
      res.writeHead(405).end();
    } else if (path === '/metrics') {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(registry.render());
    } else if (path === '/healthz') {
      const ok = health.live();
      res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ok\n' : 'unhealthy\n');
    } else if (path === '/readyz') {
      const ok = health.ready();
      res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ready\n' : 'not ready\n');
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
