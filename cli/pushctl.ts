#!/usr/bin/env -S node --import tsx
import { stackCommand, stackHelp } from './commands/stack.ts';
import { statusCommand, statusHelp } from './commands/status.ts';
import { migrateCommand, migrateHelp } from './commands/migrate.ts';
import { runCommand, runHelp } from './commands/run.ts';
import { demoCommand, demoHelp } from './commands/demo.ts';
import { arrivalCommand, arrivalHelp } from './commands/arrival.ts';
import { tokensCommand, tokensHelp } from './commands/tokens.ts';
import { replayCommand, replayHelp } from './commands/replay.ts';
import { topicsCommand, topicsHelp } from './commands/topics.ts';
import { receiverCommand, receiverHelp } from './commands/receiver.ts';
import { configCommand, configHelp } from './commands/config.ts';
import { checkConfiguration } from './config-check.ts';

/** pushctl: the operator's command line. Each command lives in cli/commands/. */
const commands: Record<string, { help: string; run: (args: string[]) => Promise<number> }> = {
  stack: { help: stackHelp, run: stackCommand },
  topics: { help: topicsHelp, run: topicsCommand },
  migrate: { help: migrateHelp, run: migrateCommand },
  run: { help: runHelp, run: runCommand },
  receiver: { help: receiverHelp, run: receiverCommand },
  demo: { help: demoHelp, run: demoCommand },
  status: { help: statusHelp, run: statusCommand },
  tokens: { help: tokensHelp, run: tokensCommand },
  replay: { help: replayHelp, run: replayCommand },
  arrival: { help: arrivalHelp, run: arrivalCommand },
  config: { help: configHelp, run: configCommand },
};

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (!name || name === '--help' || name === 'help') {
    console.log(
      'usage: pushctl <command> [args]\n\ncommands:\n' +
        Object.values(commands)
          .map((c) => '  ' + c.help.split('\n')[0])
          .join('\n') +
        '\n\nconfiguration: PUSH_* environment keys, listed by pushctl config',
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
  if (name !== 'config') checkConfiguration(process.env);
  return command.run(args);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`pushctl: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
