/**
 * A small structured logger (one JSON object per line on stderr). Fields whose names mark them as
 * secrets or device tokens are redacted before anything is written, and so is every secret value the
 * process read from its configuration wherever it appears (common/secret-values.ts), so a careless
 * call site, or a client's error message quoting a password, cannot leak them.
 */
import { readKey } from './config.ts';
import { CONFIG_KEYS, type LOG_LEVELS } from './config-keys.ts';
import { scrubSecrets } from './secret-values.ts';

export type LogLevel = (typeof LOG_LEVELS)[number];

const LEVELS: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
const SECRET_FIELD = /token|secret|password|authorization|private_?key|credential|signature|app_?key|master_?secret|bearer/i;

export interface Logger {
  debug(message: string, fields?: object): void;
  info(message: string, fields?: object): void;
  warn(message: string, fields?: object): void;
  error(message: string, fields?: object): void;
  child(fields: object): Logger;
}

/** Replaces secret-looking fields, at any depth, with a short non-reversible marker. */
export function redact(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== 'object' || depth > 6) return value;
  if (value instanceof Error) return { name: value.name, message: value.message, code: (value as { code?: unknown }).code };
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = SECRET_FIELD.test(k) && v !== undefined && v !== null ? '[redacted]' : redact(v, depth + 1);
  }
  return out;
}

/** `level` defaults to PUSH_LOG_LEVEL (common/config-keys.ts); an invalid value throws a ConfigError naming the key. */
export function createLogger(base: object = {}, level: LogLevel = readKey(process.env, CONFIG_KEYS.PUSH_LOG_LEVEL)): Logger {
  const threshold = LEVELS[level] ?? LEVELS.info;
  const write = (lvl: LogLevel, message: string, fields?: object) => {
    if (LEVELS[lvl] < threshold) return;
    const line = { t: new Date().toISOString(), level: lvl, msg: message, ...(redact({ ...base, ...fields }) as object) };
    process.stderr.write(scrubSecrets(JSON.stringify(line)) + '\n');
  };
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    child: (fields) => createLogger({ ...base, ...fields }, level),
  };
}
