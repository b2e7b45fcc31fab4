/**
 * Every command's flags as a newcomer gets them wrong (cli/args.ts): an unknown flag, a flag
 * without its value and a backwards range are each a clear message and exit 2, before the command
 * touches anything.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pushctl } from './pushctl-process.ts';

/** Each command with the arguments it needs to get as far as its flags, and one flag of it that takes a value. */
const COMMANDS: Array<{ command: string[]; valueFlag?: string }> = [
  { command: ['stack', 'status'] },
  { command: ['topics', 'describe'], valueFlag: '--prefix' },
  { command: ['migrate'] },
  { command: ['run'], valueFlag: '--stages' },
  { command: ['receiver'] },
  { command: ['demo'], valueFlag: '--users' },
  { command: ['status'], valueFlag: '--app' },
  { command: ['tokens', 'show', 'u1'], valueFlag: '--vendor' },
  { command: ['replay', '--since', '1h'], valueFlag: '--until' },
  { command: ['arrival'], valueFlag: '--since' },
  { command: ['config'] },
];

test('an unknown flag is refused by every command, naming the flag and the ones it takes', async () => {
  await Promise.all(
    COMMANDS.map(async ({ command }) => {
      const result = await pushctl([...command, '--frobnicate']);
      assert.equal(result.code, 2, `${command.join(' ')}: exit code`);
      assert.match(result.stderr, new RegExp(`^pushctl ${command[0]}: unknown flag --frobnicate \\(this command takes`, 'm'), command.join(' '));
      assert.match(result.stderr, new RegExp(`pushctl ${command[0]} --help`), command.join(' '));
      assert.equal(result.stdout, '', `${command.join(' ')} did nothing`);
    }),
  );
});

test('a flag without its value is refused by every command that takes one, at the end or before another flag', async () => {
  await Promise.all(
    COMMANDS.filter((c) => c.valueFlag).flatMap(({ command, valueFlag }) =>
      [
        [...command, valueFlag!],
        [...command, valueFlag!, '--help-me'],
      ].map(async (args) => {
        const result = await pushctl(args);
        assert.equal(result.code, 2, `${args.join(' ')}: exit code`);
        assert.match(result.stderr, new RegExp(`^pushctl ${command[0]}: ${valueFlag} needs a value$`, 'm'), args.join(' '));
      }),
    ),
  );
});

test('a backwards range is refused: replay --since later than --until', async () => {
  const result = await pushctl(['replay', '--since', '30m', '--until', '2h']);
  assert.equal(result.code, 2);
  assert.match(result.stderr, /^pushctl replay: --since 30m is not earlier than --until 2h/m);
  const empty = await pushctl(['replay', '--since', '1h', '--until', '1h']);
  assert.equal(empty.code, 2, 'an empty range too');
});

test('other misuse: a switch given a value, a flag twice, an extra argument, an unknown action, a missing uid', async () => {
  const cases: Array<[string[], RegExp]> = [
    [['status', '--json=yes'], /^pushctl status: --json takes no value$/m],
    [['arrival', '--by', 'app', '--by', 'hour'], /^pushctl arrival: --by is given twice$/m],
    [['stack', 'status', 'now'], /^pushctl stack: unexpected argument 'now'$/m],
    [['tokens', 'list', 'u1'], /^pushctl tokens: unknown action 'list' \(expected show \| invalidate\)$/m],
    [['tokens', 'show'], /^pushctl tokens: tokens show needs the user's uid/m],
    [['status', '--stage', 'teleport'], /^pushctl status: --stage: expected one of decisions \| fan-out \| receipts \| clickhouse/m],
    [['replay'], /^pushctl replay: --since is required/m],
  ];
  await Promise.all(
    cases.map(async ([args, message]) => {
      const result = await pushctl(args);
      assert.equal(result.code, 2, `${args.join(' ')}: exit code`);
      assert.match(result.stderr, message);
    }),
  );
});

test('replay --from tasks takes its flags from the command line: a dry run over an empty range answers and sends nothing', async () => {
  const result = await pushctl(['replay', '--from', 'tasks', '--since', '1m', '--uid', 'u-nobody-flags-test', '--dry-run']);
  assert.equal(result.code, 0, `exit code (stderr: ${result.stderr})`);
  assert.doesNotMatch(result.stderr, /unknown flag/);
  const wrong = await pushctl(['replay', '--from', 'archive', '--since', '1h']);
  assert.equal(wrong.code, 2);
  assert.match(wrong.stderr, /--from archive: expected tasks/);
});
