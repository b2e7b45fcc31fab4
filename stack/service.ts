/** One part of the local stack, as `pushctl stack up|down|status` sees it. */
export interface StackService {
  readonly name: string;
  readonly port: number;
  /** Starts the part unless it already answers on its port; installs what is missing first. */
  up(): Promise<'started' | 'reused'>;
  /** Stops the part only if `up` started it (PID file); returns whether it stopped anything. */
  down(): Promise<boolean>;
  status(): Promise<ServiceStatus>;
}

export interface ServiceStatus {
  readonly name: string;
  readonly port: number;
  readonly healthy: boolean;
  readonly version?: string;
  /** PID when this stack started the process. */
  readonly pid?: number;
  readonly detail?: string;
}

/** Ports may be moved with PUSH_STACK_<NAME>_PORT. */
export function stackPort(name: string, fallback: number): number {
  const raw = process.env[`PUSH_STACK_${name.toUpperCase()}_PORT`];
  if (raw === undefined || raw === '') return fallback;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`PUSH_STACK_${name.toUpperCase()}_PORT: expected a port in [1, 65535], got ${JSON.stringify(raw)}`);
  }
  return port;
}
