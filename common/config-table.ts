/**
 * Renders the configuration declarations (common/config-keys.ts) for people: the README's
 * configuration table (`npx tsx docs/config-table.ts` rewrites it; test/static/config-table.test.ts
 * fails when it is stale) and the listing of `pushctl config`.
 */
import { CONFIG_SECTIONS, configKeys, type ConfigKey, type ConfigSection } from './config-keys.ts';
import type { Env } from './config.ts';

/** The README lines between these markers are generated. */
export const TABLE_BEGIN = '<!-- config-table:begin (generated from common/config-keys.ts by `npx tsx docs/config-table.ts`; do not edit) -->';
export const TABLE_END = '<!-- config-table:end -->';

/** 1 048 576: digits grouped by thousands with spaces, as the docs write numbers. */
export function formatNumber(n: number): string {
  const digits = String(Math.abs(n));
  if (digits.length < 4) return String(n);
  return (n < 0 ? '-' : '') + digits.replace(/\B(?=(\d{3})+$)/g, ' ');
}

export function formatDefault(key: ConfigKey): string {
  if (key.defaultDoc !== undefined) return key.defaultDoc;
  switch (key.kind) {
    case 'int':
      return formatNumber(key.default);
    case 'string':
      return key.default === '' ? 'empty' : '`' + key.default + '`';
    case 'list':
      return key.default.length === 0 ? 'empty' : '`' + key.default.join(',') + '`';
    default:
      return '`' + String(key.default) + '`';
  }
}

/** The allowed values, or undefined when anything goes. */
export function formatRange(key: ConfigKey): string | undefined {
  switch (key.kind) {
    case 'int':
      return key.rangeDoc ?? `${formatNumber(key.min)}–${formatNumber(key.max)}`;
    case 'enum':
      return 'one of ' + key.values.map((v) => '`' + v + '`').join(', ');
    case 'list':
      return key.values ? 'some of ' + key.values.map((v) => '`' + v + '`').join(', ') : undefined;
    case 'bool':
      return '`true` or `false`';
    case 'string':
      return key.nonEmpty ? 'not empty' : undefined;
  }
}

/** What a key means; a secret's also says it is never printed and may come from a file. */
function meaning(key: ConfigKey): string {
  return key.secret ? `${key.doc}; a secret: never printed, and read from the file \`${key.key}_FILE\` names when that is set` : key.doc;
}

function bySection(): [ConfigSection, ConfigKey[]][] {
  return (Object.keys(CONFIG_SECTIONS) as ConfigSection[]).map((section) => [section, configKeys().filter((k) => k.section === section)]);
}

/** The README's configuration tables, one per section, without the markers. */
export function renderConfigTable(): string {
  const parts: string[] = [];
  for (const [section, keys] of bySection()) {
    parts.push(`**${CONFIG_SECTIONS[section]}**`, '', '| key | default | meaning | allowed |', '|---|---|---|---|');
    for (const key of keys) parts.push(`| \`${key.key}\` | ${formatDefault(key)} | ${meaning(key).replaceAll('|', '\\|')} | ${formatRange(key) ?? 'any'} |`);
    parts.push('');
  }
  return parts.join('\n').trimEnd();
}

/** `readme` with its generated section replaced by the current tables; throws when a marker is missing. */
export function withConfigTable(readme: string): string {
  const begin = readme.indexOf(TABLE_BEGIN);
  const end = readme.indexOf(TABLE_END);
  if (begin < 0 || end < begin) throw new Error('README.md lacks the config-table markers');
  return readme.slice(0, begin + TABLE_BEGIN.length) + '\n' + renderConfigTable() + '\n' + readme.slice(end);
}

/** The generated section as the README holds it now. */
export function readmeConfigTable(readme: string): string | undefined {
  const begin = readme.indexOf(TABLE_BEGIN);
  const end = readme.indexOf(TABLE_END);
  return begin < 0 || end < begin ? undefined : readme.slice(begin + TABLE_BEGIN.length, end).trim();
}

/** `value` with the password of any URL in it masked (a mysql:// URL may carry one). */
export function maskUrlPasswords(value: string): string {
  return value.replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^:/@\s,]*:)[^@\s,]*@/gi, '$1***@');
}

/** What `pushctl config` shows of a key set in `env`: secrets as `***` (and the file they come from), URLs without passwords. */
function shownValue(key: ConfigKey, env: Env): string {
  const set = env[key.key];
  const file = key.secret ? env[`${key.key}_FILE`] : undefined;
  if (file) return `  (set: *** from ${key.key}_FILE=${file})`;
  if (set === undefined || set === '') return '';
  return `  (set: ${key.secret ? '***' : maskUrlPasswords(set)})`;
}

/** Plain text for `pushctl config`: every key with its default, allowed values and meaning; keys set in `env` show their value. */
export function renderConfigText(env: Env = {}): string {
  const plain = (s: string) => s.replaceAll('`', '');
  const lines: string[] = [];
  for (const [section, keys] of bySection()) {
    lines.push(plain(CONFIG_SECTIONS[section]));
    for (const key of keys) {
      const value = shownValue(key, env);
      lines.push(`  ${key.key}  default ${plain(formatDefault(key))}; ${plain(formatRange(key) ?? 'any')}${value}`, `      ${plain(meaning(key))}`);
    }
    lines.push('');
  }
  return lines.join('\n').trimEnd();
}
