import { createHash } from 'node:crypto';
import mysql from 'mysql2/promise';
import { ConfigError } from '../../common/errors.ts';
import { readEndpoints } from '../../common/endpoints.ts';
import { readKey } from '../../common/config.ts';
import { CONFIG_KEYS } from '../../common/config-keys.ts';
import { trafficProducer } from '../../demo/traffic.ts';
import { UsageError } from '../args.ts';
import type { TokenReport } from '../../processors/shared/records.ts';

export const tokensHelp = `pushctl tokens show <uid> | invalidate <uid> [--device D] [--vendor V] [--reason R]

  show        the user's tokens from im_push_token (state, failures, refresh times); the token
              itself is shown only as a fingerprint
  invalidate  publishes INVALID token reports (source OPERATOR) to push.tokens: the policy stage
              stops choosing them at once and the receipts stage records them in MySQL`;

interface TokenRow {
  uid: string;
  device_id: string;
  vendor: string;
  platform: string;
  app_id: string;
  token: string;
  status: number;
  consecutive_failures: number;
  invalid_reason: string | null;
  refreshed_at: Date | null;
  invalidated_at: Date | null;
}

/** A short, non-reversible fingerprint of a token: enough to tell two apart, useless to an attacker. */
export const tokenFingerprint = (token: string) => `${createHash('sha256').update(token).digest('hex').slice(0, 10)}…(${token.length})`;

function option(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

async function tokensOf(uid: string): Promise<TokenRow[]> {
  const connection = await mysql.createConnection({ uri: readEndpoints().mysqlUrl, timezone: 'Z' });
  try {
    const [rows] = await connection.query(
      'SELECT uid, device_id, vendor, platform, app_id, token, status, consecutive_failures, invalid_reason, refreshed_at, invalidated_at FROM im_push_token WHERE uid = ? ORDER BY device_id, vendor',
      [uid],
    );
    return rows as TokenRow[];
  } finally {
    await connection.end();
  }
}

/** The user's tokens with a header line; each token only as its fingerprint. */
export function formatTokenTable(rows: readonly TokenRow[]): string {
  const header = ['device', 'vendor', 'platform', 'app', 'token (fingerprint)', 'state', 'failures', 'refreshed (UTC)'];
  const body = rows.map((r) => [
    r.device_id,
    r.vendor,
    r.platform,
    r.app_id,
    tokenFingerprint(r.token),
    r.status === 1 ? 'valid' : `INVALID (${r.invalid_reason ?? '?'})`,
    String(r.consecutive_failures),
    r.refreshed_at?.toISOString() ?? '-',
  ]);
  const widths = header.map((_, i) => Math.max(...[header, ...body].map((row) => row[i]!.length)));
  const render = (row: string[]) =>
    row
      .map((cell, i) => (i === 6 ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [render(header), ...body.map(render)].join('\n');
}

export async function tokensCommand(args: string[]): Promise<number> {
  const [action, uid] = args;
  if (action !== 'show' && action !== 'invalidate') {
    console.error(tokensHelp);
    return 2;
  }
  if (!uid) throw new UsageError(`tokens ${action} needs the user's uid (pushctl tokens ${action} <uid>)`);
  const rows = await tokensOf(uid);
  if (action === 'show') {
    if (rows.length === 0) console.log(`no tokens for ${uid}`);
    else console.log(formatTokenTable(rows));
    return 0;
  }
  const device = option(args, '--device');
  const vendor = option(args, '--vendor');
  const reason = option(args, '--reason') ?? 'operator';
  const chosen = rows.filter((r) => r.status === 1 && (!device || r.device_id === device) && (!vendor || r.vendor === vendor));
  if (chosen.length === 0)
    throw new ConfigError('uid', `no valid token of ${uid} matches${device ? ` --device ${device}` : ''}${vendor ? ` --vendor ${vendor}` : ''}`);
  const now = Date.now();
  const reports: TokenReport[] = chosen.map((r) => ({
    uid: r.uid,
    device_id: r.device_id,
    platform: r.platform,
    vendor: r.vendor,
    app_id: r.app_id,
    token: r.token,
    reported_at: now,
    state: 'INVALID',
    source: 'OPERATOR',
    reason,
    manufacturer: null,
  }));
  const producer = await trafficProducer(readKey(process.env, CONFIG_KEYS.PUSH_TOPIC_PREFIX));
  try {
    await producer.send(
      'tokens',
      reports.map((value) => ({ key: value.uid, value })),
    );
  } finally {
    await producer.close();
  }
  console.log(`invalidated ${reports.length} token(s) of ${uid}: ${chosen.map((r) => `${r.device_id}/${r.vendor}`).join(', ')}`);
  return 0;
}
