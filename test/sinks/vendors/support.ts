import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PushMessage, Vendor } from '../../../processors/fan-out/vendor-port.ts';
import { after, before, beforeEach } from 'node:test';
import { createVendorRegistry, type VendorRegistry } from '../../../sinks/vendors/registry.ts';
import { startEmulators, type StartedEmulators } from '../../../emulators/index.ts';

/** A notification as the fan-out would build it, to a token in the vendor's format. */
export function message(em: StartedEmulators, vendor: Vendor, seed: string, overrides: Partial<PushMessage> = {}): PushMessage {
  return {
    taskId: `task-${seed}`,
    appId: 'app-1',
    token: em.token(vendor, seed),
    title: 'Alice',
    body: 'See you at 7?',
    badge: 4,
    collapseId: `conv-${seed}`,
    silent: false,
    data: { conv_id: `conv-${seed}`, seq: '42', msg_id: `m-${seed}` },
    ttlSeconds: 3600,
    ...overrides,
  };
}

export interface CapturedCallback {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/** A plain HTTP receiver that records the receipt callbacks the emulators post. */
export async function startReceiver(): Promise<{
  url: string;
  calls: CapturedCallback[];
  waitFor(n: number, timeoutMs?: number): Promise<void>;
  until(done: () => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}> {
  const calls: CapturedCallback[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      calls.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"errno":"0","errmsg":"ok"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    calls,
    async waitFor(n, timeoutMs = 5000) {
      const until = Date.now() + timeoutMs;
      while (calls.length < n) {
        if (Date.now() > until) throw new Error(`expected ${n} callbacks, got ${calls.length}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async until(done, timeoutMs = 5000) {
      const until = Date.now() + timeoutMs;
      while (!done()) {
        if (Date.now() > until) throw new Error(`condition not met within ${timeoutMs} ms (${calls.length} callbacks)`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** What a vendor suite's hooks hand to it. */
export interface EmulatorEnv {
  readonly em: StartedEmulators;
  readonly registry: VendorRegistry;
}

/**
 * Hooks of an adapter suite: before all, the six emulators (`options()` for startEmulators) and a
 * vendor registry on them; after all, both closed; before each test, the emulators reset. `use`
 * receives them.
 */
export function useEmulators(use: (env: EmulatorEnv) => void, options: () => Parameters<typeof startEmulators>[0] = () => ({})): void {
  let env: EmulatorEnv;
  before(async () => {
    const em = await startEmulators(options());
    env = { em, registry: createVendorRegistry(em.appsConfig, { now: () => em.clock.now() }) };
    use(env);
  });
  after(async () => {
    await env.registry.close();
    await env.em.close();
  });
  beforeEach(() => env.em.reset());
}

/**
 * Hooks of a receipt vendor's adapter suite: a receipt receiver, started first and closed last,
 * and the emulators of `useEmulators` with the vendor's receipts posted to it (`receiptQuery`
 * appended).
 */
export function useVendorEmulators(
  vendor: 'hms' | 'xiaomi' | 'oppo' | 'vivo',
  use: (env: EmulatorEnv & { receiver: Receiver }) => void,
  receiptQuery = '',
): void {
  let receiver: Receiver;
  before(async () => {
    receiver = await startReceiver();
  });
  useEmulators(
    (env) => use({ ...env, receiver }),
    () => ({ receiptUrls: { [vendor]: `${receiver.url}/receipts/${vendor}${receiptQuery}` } }),
  );
  after(() => receiver.close());
}
