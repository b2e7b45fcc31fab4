import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { MetricsRegistry } from './prometheus.ts';

export interface HealthSource {
  /** The process is alive and not wedged (its event loop answers). */
  live(): boolean;
  /** Tasks are assigned and restored: the worker is processing. */
  ready(): boolean;
}

/** What a worker does on request, besides answering reads. */
export interface WorkerActions {
  /**
   * Reloads the worker's apps file (pipeline/apps-reload.ts): `POST /-/reload`, answered with the
   * result as JSON, 200 when the file is in force, 422 when it was refused. The request's body is
   * not read: the worker reloads the file it was started with, nothing a caller sends.
   */
  reload?(): Promise<{ readonly ok: boolean }>;
}

/**
 * Per-worker HTTP endpoints: `/metrics` (Prometheus text format), `/healthz` (liveness),
 * `/readyz` (readiness: 503 until the worker's tasks are restored and running), and `POST
 * /-/reload` when the worker has an apps file to reload (`actions`).
 */
export async function startMetricsServer(
  registry: MetricsRegistry,
  health: HealthSource,
  port: number,
  host = '127.0.0.1',
  actions: WorkerActions = {},
): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/-/reload') {
      const reload = actions.reload;
      if (req.method !== 'POST') res.writeHead(405, { allow: 'POST' }).end();
      else if (!reload) res.writeHead(404, { 'content-type': 'text/plain' }).end('this worker has no apps file\n');
      else
        reload().then(
          (result) => res.writeHead(result.ok ? 200 : 422, { 'content-type': 'application/json' }).end(JSON.stringify(result) + '\n'),
          () => res.writeHead(500, { 'content-type': 'text/plain' }).end('reload failed\n'),
        );
      // The body, if any, is left unread: drain it so the connection can be reused.
      req.resume();
    } else if (req.method !== 'GET') {
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
