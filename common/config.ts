import { ConfigError } from './errors.ts';

/**
 * Typed readers for `PUSH_*` environment keys. Each reader validates once, at start, and throws a
 * ConfigError naming the key and the allowed range, so a bad deployment fails before it consumes.
 */
export type Env = Readonly<Record<string, string | undefined>>;

export function readString(env: Env, key: string, fallback: string): string {
  const raw = env[key];
  if (raw === undefined || raw === '') return fallback;
  return raw;
}

export function readInt(env: Env, key: string, fallback: number, range: { min: number; max: number }): number {
  const raw = env[key];
  if (raw === undefined || raw === '') return checkRange(key, fallback, range);
  if (!/^-?\d+$/.test(raw.trim())) throw new ConfigError(key, `expected an integer in [${range.min}, ${range.max}], got ${JSON.stringify(raw)}`);
  return checkRange(key, Number(raw), range);
}

export function readBool(env: Env, key: string, fallback: boolean): boolean {
  const raw = env[key];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(key, `expected true or false, got ${JSON.stringify(raw)}`);
}

export function readEnum<T extends string>(env: Env, key: string, fallback: T, allowed: readonly T[]): T {
  const raw = env[key];
  if (raw === undefined || raw === '') return fallback;
  if (!(allowed as readonly string[]).includes(raw)) throw new ConfigError(key, `expected one of ${allowed.join(' | ')}, got ${JSON.stringify(raw)}`);
  return raw as T;
}

export function readList(env: Env, key: string, fallback: readonly string[]): string[] {
  const raw = env[key];
  if (raw === undefined || raw === '') return [...fallback];
  return raw.split(',').map((s) => s.trim()).filter(Boolean);
}

/** Validates a number that came from an options object rather than the environment. */
export function checkRange(key: string, value: number, range: { min: number; max: number }): number {
  if (!Number.isFinite(value) || value < range.min || value > range.max) {
    throw new ConfigError(key, `must be within [${range.min}, ${range.max}], got ${value}`);
  }
  return value;
}
