import { readKey } from '../../common/config.ts';
import { CONFIG_KEYS } from '../../common/config-keys.ts';
import { createLogger } from '../../common/log.ts';
import { startEntry, withApiKeys } from '../../entry/start.ts';
import type { BusinessKey } from '../../entry/keys.ts';
import { closeOnSignals } from '../../topology/shutdown.ts';
import { UsageError } from '../args.ts';

export const entryHelp = `pushctl entry [keys add <business> [--rate N] | keys list [<business>] | keys revoke <key id>]

  without arguments: serves the HTTP entry for senders without Kafka (POST /v1/pushes,
  POST /v1/campaigns, GET and DELETE /v1/campaigns/{id}; docs/entry.md) until SIGTERM/SIGINT; it
  only produces to push.requests and push.campaigns.
  configuration: PUSH_ENTRY_* keys, PUSH_KAFKA_BROKERS, PUSH_SCHEMA_REGISTRY_URL, PUSH_TOPIC_PREFIX,
  PUSH_MYSQL_URL (API keys, campaign progress), PUSH_CLICKHOUSE_* (campaign accounting)
  keys add     makes an API key for a business and prints it once (only its hash is stored);
               --rate sets its own requests per second (default PUSH_ENTRY_KEY_REQUESTS_PER_SECOND)
  keys list    the keys (id, business, rate, created, revoked); never a secret
  keys revoke  revokes a key (entries notice within 10 s)`;

export async function entryCommand(args: string[]): Promise<number> {
  const plain = args.filter((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'));
  if (plain.length === 0) return serve();
  const [group, action, arg] = plain;
  if (group !== 'keys' || !['add', 'list', 'revoke'].includes(action ?? '')) throw new UsageError('expected no arguments, or keys add|list|revoke');
  if (action === 'add') {
    if (!arg) throw new UsageError('keys add needs the business id (pushctl entry keys add <business>)');
    const i = args.indexOf('--rate');
    const rate = i >= 0 ? Number(args[i + 1]) : null;
    const { key, keyId } = await withApiKeys((keys) => keys.create(arg, rate));
    console.log(`key id ${keyId} for business ${arg}; the key is shown this once:\n${key}`);
    return 0;
  }
  if (action === 'revoke') {
    if (!arg) throw new UsageError('keys revoke needs the key id (pushctl entry keys list shows them)');
    const revoked = await withApiKeys((keys) => keys.revoke(arg));
    console.log(revoked ? `key ${arg} revoked` : `no unrevoked key ${arg}`);
    return revoked ? 0 : 1;
  }
  const rows = await withApiKeys((keys) => keys.list(arg));
  console.log(formatKeyTable(rows));
  return 0;
}

/** The keys with a header line: never a secret (only its hash is stored). */
export function formatKeyTable(rows: readonly BusinessKey[]): string {
  const header = ['key id', 'business', 'rate/s', 'created (UTC)', 'revoked (UTC)'];
  const body = rows.map((r) => [
    r.keyId,
    r.business,
    r.requestsPerSecond === null ? 'default' : String(r.requestsPerSecond),
    iso(r.createdAt),
    iso(r.revokedAt),
  ]);
  const widths = header.map((_, i) => Math.max(...[header, ...body].map((row) => row[i]!.length)));
  return [header, ...body]
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

function iso(d: Date | null): string {
  return d ? d.toISOString().slice(0, 19).replace('T', ' ') : '-';
}

async function serve(): Promise<number> {
  const logger = createLogger({ service: 'push-entry' });
  const entry = await startEntry(process.env, logger);
  console.log(`entry on http://${readKey(process.env, CONFIG_KEYS.PUSH_ENTRY_HOST)}:${entry.port}`);
  closeOnSignals([{ close: () => entry.stop() }], { logger });
  await new Promise<never>(() => undefined);
  return 0;
}
