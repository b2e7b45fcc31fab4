import { PushError } from '../common/errors.ts';

/**
 * A command's flags and arguments, checked before it runs: an unknown flag, a flag without its
 * value, a switch given a value, a flag given twice and an argument too many are usage errors
 * (exit 2) naming what is wrong.
 */
export interface CommandUsage {
  /** Flags that take a value (`--since 2h` or `--since=2h`). */
  readonly values?: readonly string[];
  /** Flags that take none (`--json`). */
  readonly switches?: readonly string[];
  /** When set, the first argument must be one of these. */
  readonly actions?: readonly string[];
  /** How many plain arguments the command takes at most (default 0). */
  readonly maxArguments?: number;
}

/** A mistake in how a command was called; pushctl prints it with a pointer to the command's help and exits 2. */
export class UsageError extends PushError {
  constructor(message: string) {
    super('USAGE', message);
  }
}

/** `args` checked against `usage`, with every `--flag=value` split into `--flag value` for the command. */
export function checkArgs(args: readonly string[], usage: CommandUsage): string[] {
  const values = new Set(usage.values ?? []);
  const switches = new Set(usage.switches ?? []);
  const known = [...values, ...switches].sort();
  const seen = new Set<string>();
  const out: string[] = [];
  const plain: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith('-') || arg === '-') {
      plain.push(arg);
      out.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (!values.has(name) && !switches.has(name))
      throw new UsageError(`unknown flag ${name}${known.length > 0 ? ` (this command takes ${known.join(', ')})` : ' (this command takes no flags)'}`);
    if (seen.has(name)) throw new UsageError(`${name} is given twice`);
    seen.add(name);
    if (switches.has(name)) {
      if (eq > 0) throw new UsageError(`${name} takes no value`);
      out.push(name);
      continue;
    }
    const value = eq > 0 ? arg.slice(eq + 1) : args[i + 1];
    if (value === undefined || value === '' || (eq < 0 && value.startsWith('--'))) throw new UsageError(`${name} needs a value`);
    if (eq < 0) i++;
    out.push(name, value);
  }
  if (usage.actions && plain[0] !== undefined && !usage.actions.includes(plain[0]))
    throw new UsageError(`unknown action '${plain[0]}' (expected ${usage.actions.join(' | ')})`);
  const max = usage.maxArguments ?? 0;
  if (plain.length > max) throw new UsageError(`unexpected argument '${plain[max]}'`);
  return out;
}
