/**
 * The schema registry client of every process: PUSH_SCHEMA_REGISTRY_URL with, when set, HTTP basic
 * authentication (PUSH_SCHEMA_REGISTRY_USERNAME / _PASSWORD, as Confluent-compatible registries take
 * credentials) and the authorities of PUSH_SCHEMA_REGISTRY_TLS_CA_FILE for an `https:` URL.
 */
import { Agent } from 'node:https';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { readKey, type Env } from './config.ts';
import { SECURITY_KEYS as KEYS } from './config-keys-security.ts';
import { ConfigError } from './errors.ts';
import { readTlsMaterial, type TlsMaterial } from './tls-files.ts';

/** Credentials and trust for the registry. */
export interface RegistryAccess {
  readonly auth?: { readonly username: string; readonly password: string };
  readonly tls?: TlsMaterial;
}

/** The registry's credentials and CA from `env`, checked against its URL (a CA for an `http:` URL is refused, not ignored). */
export function readRegistryAccess(env: Env, url: string): RegistryAccess {
  const username = readKey(env, KEYS.PUSH_SCHEMA_REGISTRY_USERNAME);
  const password = readKey(env, KEYS.PUSH_SCHEMA_REGISTRY_PASSWORD);
  if (username === '' && password !== '') throw new ConfigError(KEYS.PUSH_SCHEMA_REGISTRY_USERNAME.key, 'required with PUSH_SCHEMA_REGISTRY_PASSWORD');
  if (username !== '' && password === '') throw new ConfigError(KEYS.PUSH_SCHEMA_REGISTRY_PASSWORD.key, 'required with PUSH_SCHEMA_REGISTRY_USERNAME');
  const tls = readTlsMaterial(env, { ca: KEYS.PUSH_SCHEMA_REGISTRY_TLS_CA_FILE });
  if (tls && !url.startsWith('https:'))
    throw new ConfigError(KEYS.PUSH_SCHEMA_REGISTRY_TLS_CA_FILE.key, 'set, but PUSH_SCHEMA_REGISTRY_URL is not an https: URL');
  return Object.freeze({ ...(username === '' ? {} : { auth: { username, password } }), ...(tls ? { tls } : {}) });
}

/** Where the registry is and how to be let in (Endpoints has both). */
export interface RegistryEndpoint {
  readonly schemaRegistryUrl: string;
  readonly schemaRegistry?: RegistryAccess;
}

/** An https agent trusting `tls` (undefined: Node's defaults, the system's authorities). */
export function httpsAgent(tls: TlsMaterial | undefined): Agent | undefined {
  return tls ? new Agent({ keepAlive: true, ...tls }) : undefined;
}

/** A registry client for `endpoint` (usually the Endpoints). */
export function schemaRegistryClient(endpoint: RegistryEndpoint): SchemaRegistry {
  const access = endpoint.schemaRegistry ?? {};
  const agent = httpsAgent(access.tls);
  return new SchemaRegistry({ host: endpoint.schemaRegistryUrl, ...(access.auth ? { auth: { ...access.auth } } : {}), ...(agent ? { agent } : {}) });
}
