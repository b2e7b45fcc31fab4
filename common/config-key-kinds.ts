/**
 * How a `PUSH_*` key is described: its kinds (int, string, bool, enum, list) with their ranges and
 * values, the README section it is listed in, and the builders the declarations use. The keys
 * themselves are declared in common/config-keys.ts (and, spread into it, config-keys-security.ts,
 * config-keys-entry.ts and config-keys-business.ts).
 */

/** The README table a key is listed in. */
export type ConfigSection = 'endpoints' | 'security' | 'workers' | 'decisions' | 'fan-out' | 'business';

export const CONFIG_SECTIONS: Readonly<Record<ConfigSection, string>> = {
  endpoints: 'Endpoints',
  security: 'Secured connections (docs/operations.md, "Connecting to a secured cluster")',
  workers: 'Workers (`pushctl run`) and the receiver',
  decisions: 'Decisions (docs/design.md, "online-filter", "merge" and "policy")',
  'fan-out': 'Fan-out (docs/design.md, "fan-out")',
  business: 'Business pushes (docs/entry.md)',
};

interface KeyBase {
  readonly key: `PUSH_${string}`;
  readonly section: ConfigSection;
  /** What the key means, for the README and `pushctl config`. */
  readonly doc: string;
  /** How the default reads when it is not a constant (e.g. it follows another key). */
  readonly defaultDoc?: string;
  /**
   * Never printed with a value, nor logged (common/secret-values.ts); may instead be given as a
   * file named by `<KEY>_FILE`, as containers and secret stores mount them (common/config.ts).
   */
  readonly secret?: boolean;
}

export interface IntKey extends KeyBase {
  readonly kind: 'int';
  readonly default: number;
  readonly min: number;
  readonly max: number;
  /** How the range reads when its bounds are not constant. */
  readonly rangeDoc?: string;
}
export interface StringKey extends KeyBase {
  readonly kind: 'string';
  readonly default: string;
  /** An empty value is refused. */
  readonly nonEmpty?: boolean;
}
export interface BoolKey extends KeyBase {
  readonly kind: 'bool';
  readonly default: boolean;
}
export interface EnumKey<T extends string = string> extends KeyBase {
  readonly kind: 'enum';
  readonly default: T;
  readonly values: readonly T[];
}
export interface ListKey extends KeyBase {
  readonly kind: 'list';
  readonly default: readonly string[];
  /** When set, every item must be one of these. */
  readonly values?: readonly string[];
  /** What an item is, for error messages. Default `item`. */
  readonly itemName?: string;
}
export type ConfigKey = IntKey | StringKey | BoolKey | EnumKey | ListKey;

export const int = (d: Omit<IntKey, 'kind'>): IntKey => ({ kind: 'int', ...d });
export const str = (d: Omit<StringKey, 'kind'>): StringKey => ({ kind: 'string', ...d });
export const bool = (d: Omit<BoolKey, 'kind'>): BoolKey => ({ kind: 'bool', ...d });
export const oneOf = <T extends string>(values: readonly T[], d: Omit<EnumKey<T>, 'kind' | 'values'>): EnumKey<T> => ({ kind: 'enum', values, ...d });
export const list = (d: Omit<ListKey, 'kind'>): ListKey => ({ kind: 'list', ...d });

export const SECOND = 1_000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;
