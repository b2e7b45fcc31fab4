/**
 * The one error base of the project. Every error that crosses a module boundary carries a stable
 * string `code` (for metrics, DLQ headers and tests) and a `retriable` flag; the retry module
 * (`retry.ts`) reads only these two fields.
 */
export class PushError extends Error {
  readonly code: string;
  readonly retriable: boolean;

  constructor(code: string, message: string, options: { retriable?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retriable = options.retriable ?? false;
  }
}

/** Invalid configuration: thrown at start, names the offending key and what is allowed. */
export class ConfigError extends PushError {
  readonly key: string;

  constructor(key: string, message: string) {
    super('CONFIG_INVALID', `${key}: ${message}`);
    this.key = key;
  }
}

/** A record that cannot be decoded or that breaks a schema contract; routed to the DLQ. */
export class ContractError extends PushError {
  constructor(code: string, message: string, cause?: unknown) {
    super(code, message, { retriable: false, cause });
  }
}

export function isRetriable(error: unknown): boolean {
  return error instanceof PushError ? error.retriable : false;
}

export function errorCode(error: unknown): string {
  if (error instanceof PushError) return error.code;
  if (error && typeof error === 'object' && 'code' in error && typeof error.code === 'string') return error.code;
  return 'UNKNOWN';
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
