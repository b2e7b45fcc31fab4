import { readFileSync } from 'node:fs';
import { ConfigError, errorMessage } from './errors.ts';
import type { BoolKey, ConfigKey, EnumKey, IntKey, ListKey, StringKey } from './config-keys.ts';
import { rememberSecret } from './secret-values.ts';

/**
 * Typed readers for `PUSH_*` environment keys. Each reader validates once, at start, and throws a
 * ConfigError naming the key and the allowed range, so a bad deployment fails before it consumes.
 * Keys are declared in common/config-keys.ts and read with `readKey`; the untyped readers remain for
 * command-line flags. A secret key is read from the file its `<KEY>_FILE` names when that is set
 * (`secretValue`).
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
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Validates a number that came from an options object rather than the environment. */
export function checkRange(key: string, value: number, range: { min: number; max: number }): number {
  if (!Number.isFinite(value) || value < range.min || value > range.max) {
    throw new ConfigError(key, `must be within [${range.min}, ${range.max}], got ${value}`);
  }
  return value;
}

/** A declared key's value from the environment, validated against its declaration (common/config-keys.ts). */
export function readKey<T extends string>(env: Env, key: EnumKey<T>, fallback?: T): T;
export function readKey(env: Env, key: IntKey, fallback?: number, range?: { min: number; max: number }): number;
export function readKey(env: Env, key: StringKey, fallback?: string): string;
export function readKey(env: Env, key: BoolKey, fallback?: boolean): boolean;
export function readKey(env: Env, key: ListKey, fallback?: readonly string[]): string[];
export function readKey(env: Env, key: ConfigKey, fallback?: unknown, range?: { min: number; max: number }): unknown {
  if (key.secret) env = { [key.key]: secretValue(env, key.key) };
  switch (key.kind) {
    case 'int':
      return readInt(env, key.key, (fallback as number | undefined) ?? key.default, range ?? key);
    case 'string':
      return checkKey(key, readString(env, key.key, (fallback as string | undefined) ?? key.default));
    case 'bool':
      return readBool(env, key.key, (fallback as boolean | undefined) ?? key.default);
    case 'enum':
      return readEnum(env, key.key, (fallback as string | undefined) ?? key.default, key.values);
    case 'list':
      return checkKey(key, readList(env, key.key, (fallback as readonly string[] | undefined) ?? key.default));
  }
}

/** True when `key` or, for a secret key, its `<key>_FILE` is set to something. */
export function isKeySet(env: Env, key: string): boolean {
  return Boolean(env[key] || env[`${key}_FILE`]);
}

/**
 * The raw value of a secret key: the key itself, or the contents of the file that `<key>_FILE`
 * names (the convention of container and secret-store mounts; one trailing newline is dropped).
 * Setting both is refused; an unreadable file fails naming `<key>_FILE` and the path, never a
 * value. Whatever is read is remembered, so logs and error messages are scrubbed of it
 * (common/secret-values.ts).
 */
export function secretValue(env: Env, key: string): string | undefined {
  const fileKey = `${key}_FILE`;
  const direct = env[key];
  const path = env[fileKey];
  if (path === undefined || path === '') {
    if (direct !== undefined) rememberSecret(direct);
    return direct;
  }
  if (direct !== undefined && direct !== '') throw new ConfigError(key, `set either ${key} or ${fileKey}, not both`);
  let content: string;
  try {
    content = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(fileKey, `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? errorMessage(error)}`);
  }
  const value = content.replace(/\r?\n$/, '');
  rememberSecret(value);
  return value;
}

/**
 * Validates a value that came from an options object rather than the environment against the
 * key's declaration, so both ways in share one range; `undefined` takes the declared default.
 */
export function checkKey<T extends string>(key: EnumKey<T>, value: T | undefined): T;
export function checkKey(key: IntKey, value: number | undefined, range?: { min: number; max: number }): number;
export function checkKey(key: StringKey, value: string | undefined): string;
export function checkKey(key: BoolKey, value: boolean | undefined): boolean;
export function checkKey(key: ListKey, value: string[] | undefined): string[];
export function checkKey(key: ConfigKey, value: unknown, range?: { min: number; max: number }): unknown {
  switch (key.kind) {
    case 'int':
      return checkRange(key.key, (value as number | undefined) ?? key.default, range ?? key);
    case 'string': {
      const s = (value as string | undefined) ?? key.default;
      if (key.nonEmpty && s === '') throw new ConfigError(key.key, 'must not be empty');
      return s;
    }
    case 'bool':
      return (value as boolean | undefined) ?? key.default;
    case 'enum': {
      const v = (value as string | undefined) ?? key.default;
      if (!key.values.includes(v)) throw new ConfigError(key.key, `expected one of ${key.values.join(' | ')}, got ${JSON.stringify(v)}`);
      return v;
    }
    case 'list': {
      const items = (value as string[] | undefined) ?? [...key.default];
      const unknown = key.values ? items.find((item) => !key.values!.includes(item)) : undefined;
      if (unknown !== undefined)
        throw new ConfigError(key.key, `unknown ${key.itemName ?? 'item'} ${JSON.stringify(unknown)}; expected some of ${key.values!.join(', ')}`);
      return items;
    }
  }
}
