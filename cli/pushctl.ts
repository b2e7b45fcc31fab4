#!/usr/bin/env -S node --import tsx
/**
 * pushctl: the operator's command line. The commands are listed in cli/commands.ts, each living in
 * cli/commands/; their flags are checked here (cli/args.ts) before the command's module is loaded.
 */
import { readFileSync } from 'node:fs';
import { checkConfiguration } from './config-check.ts';
import { explainConnectionError } from '../pipeline/connections.ts';
import { checkServices } from '../pipeline/service-checks.ts';
import { scrubSecrets } from '../common/secret-values.ts';
import { readEndpoints } from '../common/endpoints.ts';
import { ConfigError } from '../common/errors.ts';
import { checkArgs, UsageError } from './args.ts';
import { commands } from './commands.ts';

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
    const all = await Promise.all(Object.values(commands).map((c) => c.load()));
    console.log(
      'usage: pushctl <command> [args]\n\ncommands:\n' +
        all.map((c) => '  ' + c.help.split('\n')[0]).join('\n') +
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
    console.log((await command.load()).help);
    return 0;
  }
  // Every PUSH_* key is checked before any command acts, and every bad one is named at once;
  // pushctl config lists the keys and reports the same errors itself.
  let checked: string[];
  try {
    checked = checkArgs(args, command.usage);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    const { help } = await command.load();
    console.error(`pushctl ${name}: ${error.message}\nusage: ${help.split('\n')[0]}\n(pushctl ${name} --help explains the command and its flags)`);
    return 2;
  }
  if (name !== 'config') checkConfiguration(process.env);
  // Each service the command needs, reached as its clients reach it (TLS, credentials), each failure named with its key.
  if (command.needs) await checkServices(command.needs(checked), readEndpoints());
  const { run } = await command.load();
  try {
    return await run(checked);
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
    // A client's message may quote what it was given: no secret this process read is printed.
    console.error(`pushctl: ${scrubSecrets(failureMessage(error))}`);
    process.exit(1);
  },
);
