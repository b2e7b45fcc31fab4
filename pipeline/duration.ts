/** Durations as the operator commands take them (`--since 24h`, `--until 90m`). */
import { ConfigError } from '../common/errors.ts';

const UNIT_MS: Readonly<Record<string, number>> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** Parses `<n><s|m|h|d|w>` into milliseconds. */
export function parseDuration(text: string, key = '--since'): number {
  const m = /^(\d{1,6})\s*([smhdw])$/.exec(text.trim());
  if (!m) throw new ConfigError(key, `expected a duration such as 90m, 24h or 7d, got ${JSON.stringify(text)}`);
  const ms = Number(m[1]) * UNIT_MS[m[2]!]!;
  if (ms <= 0) throw new ConfigError(key, 'must be greater than zero');
  return ms;
}
