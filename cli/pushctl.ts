#!/usr/bin/env -S node --import tsx
import { readFileSync } from 'node:fs';
import { stackCommand, stackHelp } from './commands/stack.ts';
import { statusCommand, statusHelp } from './commands/status.ts';
import { migrateCommand, migrateHelp } from './commands/migrate.ts';
import { archiveCommand, archiveHelp } from './commands/archive.ts';
import { runCommand, runHelp } from './commands/run.ts';
import { demoCommand, demoHelp } from './commands/demo.ts';
import { arrivalCommand, arrivalHelp } from './commands/arrival.ts';
import { tokensCommand, tokensHelp } from './commands/tokens.ts';
import { replayCommand, replayHelp } from './commands/replay.ts';
import { topicsCommand, topicsHelp } from './commands/topics.ts';
import { receiverCommand, receiverHelp } from './commands/receiver.ts';
import { configCommand, configHelp } from './commands/config.ts';
import { traceCommand, traceHelp } from './commands/trace.ts';
import { entryCommand, entryHelp } from './commands/entry.ts';
import { campaignsCommand, campaignsHelp } from './commands/campaigns.ts';
import { repartitionCommand, repartitionHelp } from './commands/repartition.ts';
import { checkConfiguration } from './config-check.ts';
import { checkReachable, explainConnectionError, type Service } from '../pipeline/connections.ts';
import { readEndpoints } from '../common/endpoints.ts';
import { ConfigError } from '../common/errors.ts';
import { checkArgs, UsageError, type CommandUsage } from './args.ts';

/** pushctl: the operator's command line. Each command lives in cli/commands/; its flags are checked here (cli/args.ts). */
/**
 * `needs`: the services a command talks to, checked before it runs so that an unreachable one is
 * named with its PUSH_* key at once (run, receiver and demo retry a restarting broker themselves).
 */
const commands: Record<string, { help: string; usage: CommandUsage; needs?: (args: string[]) => Service[]; run: (args: string[]) => Promise<number> }> = {
  stack: { help: stackHelp, usage: { actions: ['up', 'down', 'status'], maxArguments: 1, values: ['--brokers'] }, run: stackCommand },
  topics: {
    help: topicsHelp,
    needs: () => ['kafka'],
    usage: { actions: ['create', 'describe'], maxArguments: 1, values: ['--partitions', '--prefix'] },
    run: topicsCommand,
  },
  migrate: {
    help: migrateHelp,
    needs: (a) => (a.includes('--mysql-only') ? ['mysql'] : ['mysql', 'clickhouse']),
    usage: { switches: ['--mysql-only'] },
    run: migrateCommand,
  },
  archive: { help: archiveHelp, needs: () => ['mysql'], usage: { values: ['--days', '--batch'] }, run: archiveCommand },
  run: { help: runHelp, usage: { values: ['--stages', '--instances'], switches: ['--receiver'] }, run: runCommand },
  receiver: { help: receiverHelp, usage: {}, run: receiverCommand },
  demo: { help: demoHelp, usage: { values: ['--users', '--messages', '--seconds', '--instances'] }, run: demoCommand },
  status: { help: statusHelp, needs: () => ['kafka'], usage: { values: ['--app', '--stage', '--metrics'], switches: ['--json'] }, run: statusCommand },
  tokens: {
    help: tokensHelp,
    needs: (a) => (a[0] === 'invalidate' ? ['mysql', 'kafka', 'registry'] : ['mysql']),
    usage: { actions: ['show', 'invalidate'], maxArguments: 2, values: ['--device', '--vendor', '--reason'] },
    run: tokensCommand,
  },
  replay: {
    help: replayHelp,
    needs: () => ['mysql', 'kafka', 'registry'],
    usage: { values: ['--since', '--until', '--from', '--uid', '--vendor', '--app'], switches: ['--dry-run'] },
    run: replayCommand,
  },
  trace: {
    help: traceHelp,
    needs: () => ['clickhouse', 'mysql'],
    usage: { values: ['--conv', '--since'], switches: ['--json'], maxArguments: 1 },
    run: traceCommand,
  },
  arrival: { help: arrivalHelp, needs: () => ['clickhouse'], usage: { values: ['--since', '--by'] }, run: arrivalCommand },
  config: { help: configHelp, usage: { switches: ['--markdown'] }, run: configCommand },
  entry: {
    help: entryHelp,
    needs: (a) => (a[0] === 'keys' ? ['mysql'] : ['mysql', 'kafka', 'registry', 'clickhouse']),
    usage: { values: ['--rate'], maxArguments: 3 },
    run: entryCommand,
  },
  campaigns: {
    help: campaignsHelp,
    needs: (a) => (a[0] === 'show' ? ['mysql', 'clickhouse'] : ['mysql', 'clickhouse', 'kafka', 'registry']),
    usage: { actions: ['show', 'cancel'], values: ['--sender'], maxArguments: 2 },
    run: campaignsCommand,
  },
  repartition: {
    help: repartitionHelp,
    needs: (a) => (a[0] === 'prepare' ? ['kafka', 'registry'] : ['kafka']),
    usage: {
      actions: ['prepare', 'check', 'cutover'],
      maxArguments: 1,
      values: ['--to', '--to-prefix', '--to-app', '--from-prefix', '--from-app', '--quiet-ms'],
    },
    run: repartitionCommand,
  },
};

/** The version in package.json, next to cli/. */
function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: string };
  return pkg.version ?? 'unknown';
}

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === '--version') {
    console.log(`pushctl ${packageVersion()}`);
    return 0;
  }
  if (!name || name === '--help' || name === 'help') {
    console.log(
      'usage: pushctl <command> [args]\n\ncommands:\n' +
        Object.values(commands)
          .map((c) => '  ' + c.help.split('\n')[0])
          .join('\n') +
        '\n\nconfiguration: PUSH_* environment keys, listed by pushctl config\npushctl <command> --help explains a command; pushctl --version prints the version',
    );
    return name ? 0 : 2;
  }
  const command = commands[name];
  if (!command) {
    console.error(`pushctl: unknown command '${name}' (try pushctl --help)`);
    return 2;
  }
  if (args.includes('--help')) {
    console.log(command.help);
    return 0;
  }
  // Every PUSH_* key is checked before any command acts, and every bad one is named at once;
  // pushctl config lists the keys and reports the same errors itself.
  let checked: string[];
  try {
    checked = checkArgs(args, command.usage);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`pushctl ${name}: ${error.message}\nusage: ${command.help.split('\n')[0]}\n(pushctl ${name} --help explains the command and its flags)`);
    return 2;
  }
  if (name !== 'config') checkConfiguration(process.env);
  if (command.needs) await checkReachable(command.needs(checked), readEndpoints());
  try {
    return await command.run(checked);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`pushctl ${name}: ${error.message}\n(pushctl ${name} --help explains the command and its flags)`);
    return 2;
  }
}

/** The message pushctl prints for a failed command; a client that could not connect names the service and the key to fix. */
function failureMessage(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (error instanceof ConfigError) return error.message;
  try {
    return (explainConnectionError(error, readEndpoints()) ?? error).message;
  } catch {
    // The endpoints' keys are invalid (reported by the configuration check): the error as it is.
    return error.message;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`pushctl: ${failureMessage(error)}`);
    process.exit(1);
  },
);
