import { readKey, type Env } from '../common/config.ts';
import { CONFIG_KEYS } from '../common/config-keys.ts';

export interface EntryConfig {
  /** PUSH_ENTRY_HOST. */
  readonly host: string;
  /** PUSH_ENTRY_PORT (0: any free port). */
  readonly port: number;
  /** PUSH_ENTRY_MAX_BODY_BYTES: larger requests get 413. */
  readonly maxBodyBytes: number;
  /** PUSH_ENTRY_MAX_CONNECTIONS. */
  readonly maxConnections: number;
  /** PUSH_ENTRY_KEY_REQUESTS_PER_SECOND: a key's rate unless its row sets one. */
  readonly keyRequestsPerSecond: number;
  /** PUSH_CAMPAIGN_MAX_UIDS: larger campaigns get 400 (the expansion would dead-letter them). */
  readonly maxCampaignUids: number;
  /** From a connection's opening (or its previous answer) to the end of the next request's headers, ms. */
  readonly headersTimeoutMs: number;
  /** To read a request's body once its headers are in, ms; a slower client is disconnected. */
  readonly bodyTimeoutMs: number;
}

/** The entry's configuration from PUSH_ENTRY_* keys (common/config-keys.ts); a bad value fails naming its key. */
export function readEntryConfig(env: Env = process.env): EntryConfig {
  return Object.freeze({
    host: readKey(env, CONFIG_KEYS.PUSH_ENTRY_HOST),
    port: readKey(env, CONFIG_KEYS.PUSH_ENTRY_PORT),
    maxBodyBytes: readKey(env, CONFIG_KEYS.PUSH_ENTRY_MAX_BODY_BYTES),
    maxConnections: readKey(env, CONFIG_KEYS.PUSH_ENTRY_MAX_CONNECTIONS),
    keyRequestsPerSecond: readKey(env, CONFIG_KEYS.PUSH_ENTRY_KEY_REQUESTS_PER_SECOND),
    maxCampaignUids: readKey(env, CONFIG_KEYS.PUSH_CAMPAIGN_MAX_UIDS),
    headersTimeoutMs: 5_000,
    bodyTimeoutMs: 10_000,
  });
}
