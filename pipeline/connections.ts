/**
 * Reachability of the services the operator commands use (Kafka, the schema registry, MySQL,
 * ClickHouse): a port check before a command starts, and the explanation of a client's own
 * connection error, each naming the PUSH_* key to fix. Used by cli/pushctl.ts.
 */
import { connect } from 'node:net';
import type { Endpoints } from '../common/endpoints.ts';
import { PushError } from '../common/errors.ts';

/** The services pushctl talks to, each with the PUSH_* key that says where it is. */
export const SERVICES = {
  kafka: { name: 'Kafka', key: 'PUSH_KAFKA_BROKERS' },
  registry: { name: 'the schema registry', key: 'PUSH_SCHEMA_REGISTRY_URL' },
  mysql: { name: 'MySQL', key: 'PUSH_MYSQL_URL' },
  clickhouse: { name: 'ClickHouse', key: 'PUSH_CLICKHOUSE_URL' },
} as const;
export type Service = keyof typeof SERVICES;

/**
 * A service pushctl cannot reach; the message names it, where it was looked for and the key to fix.
 * Retriable: a worker starting while its broker restarts tries again.
 */
export class ServiceUnreachableError extends PushError {
  constructor(
    readonly service: Service,
    address: string,
    why: string,
  ) {
    super(
      'SERVICE_UNREACHABLE',
      `cannot reach ${SERVICES[service].name} at ${address} (${why}): set ${SERVICES[service].key} to where it runs, or start the local stack with pushctl stack up`,
      { retriable: true },
    );
  }
}

interface Address {
  readonly host: string;
  readonly port: number;
}

/** Where each service is, host and port only: URLs may carry credentials, which are never printed. */
export function serviceAddresses(endpoints: Endpoints): Record<Service, Address[]> {
  const fromUrl = (url: string, defaultPort: number): Address[] => {
    try {
      const u = new URL(url);
      return [{ host: u.hostname.replace(/^\[|\]$/g, ''), port: u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : defaultPort }];
    } catch {
      // Not a URL: the client will say so itself; there is no address to check.
      return [];
    }
  };
  return {
    kafka: endpoints.kafkaBrokers.map((b) => {
      const i = b.lastIndexOf(':');
      return { host: b.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(b.slice(i + 1)) };
    }),
    registry: fromUrl(endpoints.schemaRegistryUrl, 80),
    mysql: fromUrl(endpoints.mysqlUrl, 3306),
    clickhouse: fromUrl(endpoints.clickhouseUrl, 8123),
  };
}

const REASONS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  ETIMEDOUT: 'timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ECONNRESET: 'connection reset',
};

function tcpCheck(address: Address, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host: address.host, port: address.port });
    const done = (why: string | undefined) => {
      socket.destroy();
      resolve(why);
    };
    socket.setTimeout(timeoutMs, () => done(REASONS.ETIMEDOUT));
    socket.once('connect', () => done(undefined));
    socket.once('error', (error: NodeJS.ErrnoException) => done(REASONS[error.code ?? ''] ?? error.code ?? 'cannot connect'));
  });
}

/**
 * Checks that each service answers on its port (Kafka: any one broker) before a command starts,
 * so that an unreachable one is named at once instead of after the clients' own retries.
 */
export async function checkReachable(services: readonly Service[], endpoints: Endpoints, timeoutMs = 3000): Promise<void> {
  const addresses = serviceAddresses(endpoints);
  for (const service of services) {
    const list = addresses[service];
    if (list.length === 0) continue;
    const results = await Promise.all(list.map((a) => tcpCheck(a, timeoutMs)));
    if (results.some((r) => r === undefined)) continue;
    throw new ServiceUnreachableError(service, list.map((a) => `${a.host}:${a.port}`).join(','), results[0]!);
  }
}

/**
 * An error of a client that could not connect, explained: which service (matched by the address
 * in the error) and the PUSH_* key to fix. Undefined when the error is not a connection error.
 */
export function explainConnectionError(error: unknown, endpoints: Endpoints): ServiceUnreachableError | undefined {
  let code: string | undefined;
  let address: string | undefined;
  // The address and code are on the error or on one of its causes (fetch, kafkajs wrap them).
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const f = e as { code?: unknown; address?: unknown; port?: unknown; message?: unknown };
    if (typeof f.code === 'string' && f.code in REASONS) code ??= f.code;
    if (typeof f.address === 'string' && typeof f.port === 'number') address ??= `${f.address}:${f.port}`;
    const m = typeof f.message === 'string' ? /\b(ECONNREFUSED|ENOTFOUND|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN)\b\s*(\S+:\d+)?/.exec(f.message) : null;
    if (m) {
      code ??= m[1];
      if (m[2]) address ??= m[2];
    }
  }
  if (code === undefined) return undefined;
  const addresses = serviceAddresses(endpoints);
  const matches = (a: Address) => address !== undefined && (address === `${a.host}:${a.port}` || address.endsWith(`:${a.port}`));
  const service = (Object.keys(addresses) as Service[]).find((s) => addresses[s].some(matches));
  if (service === undefined) return undefined;
  return new ServiceUnreachableError(service, address!, REASONS[code]!);
}
