/**
 * TLS material of one service (Kafka, the schema registry, MySQL, ClickHouse), read once at start
 * from its `PUSH_*_TLS_*_FILE` keys (common/config-keys-security.ts) and checked there: a file that
 * cannot be read or holds no PEM certificate or key fails naming the key, before any connection.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Agent } from 'undici';
import { isKeySet, readKey, type Env } from './config.ts';
import type { StringKey } from './config-key-kinds.ts';
import { ConfigError, errorMessage } from './errors.ts';

/** PEM contents, as Node's TLS options take them. */
export interface TlsMaterial {
  /** Authorities the peer's certificate must chain to; absent: the system's. */
  readonly ca?: Buffer;
  /** A client certificate and its key (mutual TLS), both or neither. */
  readonly cert?: Buffer;
  readonly key?: Buffer;
  /** Passphrase of an encrypted key. */
  readonly passphrase?: string;
}

/** The keys one service's TLS material is read from. */
export interface TlsKeys {
  readonly ca: StringKey;
  readonly cert?: StringKey;
  readonly key?: StringKey;
  readonly passphrase?: StringKey;
}

function readFile(key: StringKey, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new ConfigError(key.key, `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? errorMessage(error)}`);
  }
}

function readCertificate(env: Env, key: StringKey): Buffer | undefined {
  const path = readKey(env, key);
  if (path === '') return undefined;
  const pem = readFile(key, path);
  try {
    new X509Certificate(pem);
  } catch {
    throw new ConfigError(key.key, `${path} holds no PEM certificate`);
  }
  return pem;
}

/** The TLS material set in `env`, undefined when none of its keys is set. */
export function readTlsMaterial(env: Env, keys: TlsKeys): TlsMaterial | undefined {
  const ca = readCertificate(env, keys.ca);
  const cert = keys.cert && readCertificate(env, keys.cert);
  const keyPath = keys.key ? readKey(env, keys.key) : '';
  const passphrase = keys.passphrase ? readKey(env, keys.passphrase) : '';
  if (cert && keyPath === '') throw new ConfigError(keys.key!.key, `required with ${keys.cert!.key}`);
  if (!cert && keyPath !== '') throw new ConfigError(keys.cert!.key, `required with ${keys.key!.key}`);
  if (passphrase !== '' && keyPath === '') throw new ConfigError(keys.passphrase!.key, `set, but ${keys.key!.key} is not`);
  let key: Buffer | undefined;
  if (keyPath !== '') {
    key = readFile(keys.key!, keyPath);
    try {
      createPrivateKey({ key, format: 'pem', ...(passphrase === '' ? {} : { passphrase }) });
    } catch (error) {
      const encrypted = /encrypted|passphrase|bad decrypt/i.test(errorMessage(error));
      if (encrypted && keys.passphrase) throw new ConfigError(keys.passphrase.key, `does not decrypt ${keyPath}`);
      if (encrypted) throw new ConfigError(keys.key!.key, `${keyPath} is encrypted; give the key unencrypted (a file only this user can read)`);
      throw new ConfigError(keys.key!.key, `${keyPath} holds no PEM private key`);
    }
  }
  if (!ca && !cert) return undefined;
  return { ...(ca ? { ca } : {}), ...(cert ? { cert, key: key! } : {}), ...(passphrase === '' ? {} : { passphrase }) };
}

/** Every key of `keys` that is set in `env` (for the checks that refuse TLS material where it would not be used). */
export function tlsKeysSet(env: Env, keys: TlsKeys): string[] {
  return [keys.ca, keys.cert, keys.key, keys.passphrase].filter((k): k is StringKey => k !== undefined && isKeySet(env, k.key)).map((k) => k.key);
}

const dispatchers = new WeakMap<TlsMaterial, Agent>();

/**
 * An undici dispatcher trusting `tls` for `fetch` of the `undici` package (one per material, kept);
 * undefined without material: the default dispatcher and the system's authorities.
 */
export function tlsDispatcher(tls: TlsMaterial | undefined): Agent | undefined {
  if (!tls) return undefined;
  let agent = dispatchers.get(tls);
  if (!agent) dispatchers.set(tls, (agent = new Agent({ connect: { ...tls } })));
  return agent;
}
