import { createHash } from 'node:crypto';
import { invalidateTokens, tokensOf, type TokenRow } from '../../pipeline/tokens-admin.ts';
import { UsageError } from '../args.ts';

export const tokensHelp = `pushctl tokens show <uid> | invalidate <uid> [--device D] [--vendor V] [--reason R]

  show        the user's tokens from im_push_token (state, failures, refresh times); the token
              itself is shown only as a fingerprint
  invalidate  publishes INVALID token reports (source OPERATOR) to push.tokens: the policy stage
              stops choosing them at once and the receipts stage records them in MySQL`;

/** A short, non-reversible fingerprint of a token: enough to tell two apart, useless to an attacker. */
export const tokenFingerprint = (token: string) => `${createHash('sha256').update(token).digest('hex').slice(0, 10)}…(${token.length})`;

function option(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
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
  const chosen = await invalidateTokens(uid, rows, { ...(device ? { device } : {}), ...(vendor ? { vendor } : {}), reason });
  console.log(`invalidated ${chosen.length} token(s) of ${uid}: ${chosen.map((r) => `${r.device_id}/${r.vendor}`).join(', ')}`);
  return 0;
}
