/**
 * Runs the vendor emulators as standalone servers (for the demo and the benchmark):
 *   tsx emulators/main.ts [--apps app-1,app-2] [--config out/apps.json] [--port-base 18400]
 *     [--receipts http://127.0.0.1:8088/receipts]   (receiver root; /<vendor> is appended)
 * Writes the generated apps config (credentials, base URLs, CA) to --config and prints the
 * base URLs. Stops on SIGINT / SIGTERM.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { VENDORS } from '../processors/fan-out/vendor-port.ts';
import { RECEIPT_VENDORS } from '../sinks/vendors/modules.ts';
import { startEmulators } from './index.ts';

const { values } = parseArgs({
  options: {
    apps: { type: 'string', default: 'app-1' },
    config: { type: 'string', default: '.run/emulators/apps.json' },
    'port-base': { type: 'string' },
    receipts: { type: 'string' },
  },
});
const base = values['port-base'] === undefined ? undefined : Number(values['port-base']);
const receiptRoot = values.receipts?.replace(/\/+$/, '');
const emulators = await startEmulators({
  apps: values
    .apps!.split(',')
    .map((s) => s.trim())
    .filter(Boolean),
  ...(base === undefined ? {} : { ports: Object.fromEntries(VENDORS.map((v, i) => [v, base + i])) }),
  ...(receiptRoot === undefined ? {} : { receiptUrls: Object.fromEntries(RECEIPT_VENDORS.map((v) => [v, `${receiptRoot}/${v}`])) }),
});
mkdirSync(dirname(values.config!), { recursive: true });
writeFileSync(values.config!, JSON.stringify({ ...emulators.rawAppsConfig, hmsReceiptSigning: emulators.hmsReceiptSigning }, null, 2), { mode: 0o600 });
for (const v of VENDORS) process.stdout.write(`${v.padEnd(7)} ${emulators.baseUrls[v]}\n`);
process.stdout.write(`apps config (with credentials) written to ${values.config}\n`);
const stop = () => {
  emulators.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
