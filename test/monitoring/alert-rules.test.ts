/**
 * The alert rules of monitoring/alerts.yml, checked by Prometheus' own promtool: the file is valid,
 * its unit tests (monitoring/alerts.test.yml, input series for each rule, firing and not firing)
 * pass, every rule has both kinds of case, and each rule's cases fail when the rule is taken out,
 * so none of them passes by itself.
 */
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ALERT_RULES, PROMTOOL, ensurePrometheusInstalled } from '../../stack/prometheus.ts';

const run = promisify(execFile);
const RULE_TESTS = join(ALERT_RULES, '..', 'alerts.test.yml');

/** promtool's exit code and output (it exits 1 on a failed check). */
async function promtool(args: string[], cwd: string): Promise<{ code: number; output: string }> {
  return run(PROMTOOL, args, { cwd, timeout: 60_000 }).then(
    (r) => ({ code: 0, output: r.stdout + r.stderr }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? 1, output: (e.stdout ?? '') + (e.stderr ?? '') }),
  );
}

const rules = readFileSync(ALERT_RULES, 'utf8');
const alertNames = [...rules.matchAll(/^\s*- alert: (\w+)$/gm)].map((m) => m[1]!);

before(() => ensurePrometheusInstalled());

test('the rules file is valid and names every alert the operations guide expects', async () => {
  const check = await promtool(['check', 'rules', ALERT_RULES], tmpdir());
  assert.equal(check.code, 0, check.output);
  assert.match(check.output, new RegExp(`SUCCESS: ${alertNames.length} rules found`));
  assert.deepEqual(alertNames.sort(), [
    'PushAppsFileRefused',
    'PushArrivalLow',
    'PushCampaignExpansionStalled',
    'PushConsumerLagGrowing',
    'PushCredentialExpiring',
    'PushDeadLetters',
    'PushRestartLoop',
    'PushTokenInvalidationsSurge',
    'PushVendorErrors',
  ]);
});

test("promtool's unit tests of the rules pass, with a firing and a quiet case for every rule", async () => {
  const result = await promtool(['test', 'rules', RULE_TESTS], join(ALERT_RULES, '..'));
  assert.equal(result.code, 0, result.output);
  // Each evaluation is `alertname: X` followed by its expected alerts: `[]` (quiet) or a list (firing).
  const cases = [...readFileSync(RULE_TESTS, 'utf8').matchAll(/alertname: (\w+)\n\s*exp_alerts:( \[\])?/g)];
  for (const name of alertNames) {
    const mine = cases.filter((c) => c[1] === name);
    assert.ok(
      mine.some((c) => c[2] === undefined),
      `${name}: no case where it fires`,
    );
    assert.ok(
      mine.some((c) => c[2] !== undefined),
      `${name}: no case where it stays quiet`,
    );
  }
});

test("each rule's cases fail without the rule", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'push-alerts-'));
  try {
    copyFileSync(RULE_TESTS, join(dir, 'alerts.test.yml'));
    for (const name of alertNames) {
      // The rule's block runs from its `- alert:` line to the next rule or the end.
      const without = rules.replace(new RegExp(`\\n\\s*(#[^\\n]*\\n\\s*)*- alert: ${name}\\n[\\s\\S]*?(?=\\n\\s*(#[^\\n]*\\n\\s*)*- alert: |\\s*$)`), '\n');
      assert.notEqual(without, rules, `${name}: rule block not found`);
      writeFileSync(join(dir, 'alerts.yml'), without);
      const result = await promtool(['test', 'rules', 'alerts.test.yml'], dir);
      assert.notEqual(result.code, 0, `${name}: its cases pass without it`);
      assert.match(result.output, new RegExp(`alertname: ${name}`), `${name}: the failure is not about it:\n${result.output}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
