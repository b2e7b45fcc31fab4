import { localStackPort } from '../common/endpoints.ts';
import type { DEFAULT_PORTS } from '../common/endpoints.ts';

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

/** Ports move with PUSH_STACK_<KEY>_PORT; the endpoint defaults (common/endpoints.ts) follow. */
export function stackPort(name: keyof typeof DEFAULT_PORTS, stackKey: string): number {
  return localStackPort(process.env, name, stackKey);
}
