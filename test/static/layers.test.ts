import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';

/**
 * The layer fence of eslint.config.js (docs/design.md, "Layers") stays in place: an import that
 * points the wrong way is a lint error, one that follows the layers is not. checks.test.ts runs the
 * linter over the whole tree; this proves the rules it runs would catch a wrong import.
 */
const CASES: ReadonlyArray<{ file: string; imports: string; allowed: boolean }> = [
  { file: 'processors/policy/probe.ts', imports: '../../sinks/vendors/text.ts', allowed: false },
  { file: 'processors/fan-out/probe.ts', imports: '../../pipeline/topics.ts', allowed: false },
  { file: 'processors/receipt-join/probe.ts', imports: '../../receipts/server.ts', allowed: false },
  { file: 'processors/probe.ts', imports: 'kafkajs', allowed: false },
  { file: 'topology/probe.ts', imports: '../pipeline/topics.ts', allowed: false },
  { file: 'topology/probe.ts', imports: '../processors/model/records.ts', allowed: false },
  { file: 'sinks/vendors/probe.ts', imports: '../../pipeline/topics.ts', allowed: false },
  { file: 'receipts/probe.ts', imports: '../pipeline/topics.ts', allowed: false },
  { file: 'pipeline/probe.ts', imports: '../cli/commands/topics.ts', allowed: false },
  { file: 'demo/probe.ts', imports: '../cli/commands/topics.ts', allowed: false },
  { file: 'bench/probe.ts', imports: '../cli/commands/status.ts', allowed: false },
  { file: 'demo/probe.ts', imports: '../bench/phases.ts', allowed: false },
  { file: 'common/probe.ts', imports: '../topology/api.ts', allowed: false },
  { file: 'pipeline/probe.ts', imports: '../emulators/index.ts', allowed: false },
  { file: 'emulators/probe.ts', imports: '../pipeline/topics.ts', allowed: false },
  { file: 'pipeline/probe.ts', imports: '../entry/server.ts', allowed: false },
  { file: 'receipts/probe.ts', imports: '../entry/keys.ts', allowed: false },
  { file: 'entry/probe.ts', imports: '../demo/workload.ts', allowed: false },
  // Above the runtime, only its API: not its in-memory stores, task loop or transactions.
  { file: 'processors/fan-out/probe.ts', imports: '../../topology/in-memory-stores.ts', allowed: false },
  { file: 'sinks/mysql/probe.ts', imports: '../../topology/task.ts', allowed: false },
  { file: 'receipts/probe.ts', imports: '../topology/eos.ts', allowed: false },
  // The directions the layers allow.
  { file: 'processors/fan-out/probe.ts', imports: '../../topology/api.ts', allowed: true },
  { file: 'processors/fan-out/probe.ts', imports: '../../topology/stores.ts', allowed: true },
  { file: 'sinks/metrics/probe.ts', imports: '../../topology/metrics.ts', allowed: true },
  { file: 'receipts/probe.ts', imports: '../topology/partitioner.ts', allowed: true },
  { file: 'pipeline/probe.ts', imports: '../topology/runtime.ts', allowed: true },
  { file: 'sinks/vendors/probe.ts', imports: '../../processors/fan-out/vendor-port.ts', allowed: true },
  { file: 'pipeline/probe.ts', imports: '../receipts/parsers.ts', allowed: true },
  { file: 'bench/probe.ts', imports: '../demo/workload.ts', allowed: true },
  { file: 'emulators/probe.ts', imports: '../sinks/vendors/apps-config.ts', allowed: true },
  { file: 'demo/probe.ts', imports: '../emulators/index.ts', allowed: true },
  { file: 'cli/commands/probe.ts', imports: '../../pipeline/topics-admin.ts', allowed: true },
  { file: 'entry/probe.ts', imports: '../pipeline/serdes.ts', allowed: true },
  { file: 'cli/commands/probe.ts', imports: '../../entry/start.ts', allowed: true },
  { file: 'test/cli/probe.test.ts', imports: '../../cli/commands/arrival.ts', allowed: true },
];

test('imports against the layers are lint errors, imports along them are not', async () => {
  // The probes are not files on disk, so the type-aware parser could not find them in tsconfig.json:
  // lint them without types (the layer rules need none).
  const eslint = new ESLint({ overrideConfig: tseslint.configs.disableTypeChecked });
  const verdicts = await Promise.all(
    CASES.map(async (c) => {
      const [result] = await eslint.lintText(`import type { X } from '${c.imports}';\nexport type Y = X;\n`, { filePath: c.file });
      const fenced = (result?.messages ?? []).some((m) => m.ruleId === 'no-restricted-imports');
      return `${c.file} → ${c.imports}: ${fenced ? 'refused' : 'allowed'}`;
    }),
  );
  assert.deepEqual(
    verdicts,
    CASES.map((c) => `${c.file} → ${c.imports}: ${c.allowed ? 'allowed' : 'refused'}`),
  );
});
