import { createPrivateKey, sign, type KeyObject } from 'node:crypto';

/** Signs a compact JWS with RS256 (PKCS#1 v1.5, SHA-256). */
export function signRs256(header: object, claims: object, key: string | KeyObject): string {
  const k = typeof key === 'string' ? createPrivateKey(key) : key;
  const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  return `${input}.${sign('sha256', Buffer.from(input), k).toString('base64url')}`;
}
