import type { Service } from '../pipeline/connections.ts';
import type { CommandUsage } from './args.ts';

/** What a command's module gives pushctl (cli/pushctl.ts): its help text and its entry point. */
export interface Command {
  readonly help: string;
  run(args: string[]): Promise<number>;
}

/**
 * pushctl's commands, each living in cli/commands/. A command's module is loaded only when that
 * command runs: a worker or a one-off command does not pay for the start-up of every other
 * command's clients. `usage`: the flags pushctl checks before loading it (cli/args.ts). `needs`:
 * the services it talks to, checked before it runs so that an unreachable one is named with its
 * PUSH_* key at once (run, receiver and demo retry a restarting broker themselves).
 */
export const commands: Record<string, { load: () => Promise<Command>; usage: CommandUsage; needs?: (args: string[]) => Service[] }> = {
  stack: {
    load: () => import('./commands/stack.ts').then((m) => ({ help: m.stackHelp, run: m.stackCommand })),
    usage: { actions: ['up', 'down', 'status'], maxArguments: 1, values: ['--brokers'], switches: ['--secure', '--with-prometheus'] },
  },
  topics: {
    load: () => import('./commands/topics.ts').then((m) => ({ help: m.topicsHelp, run: m.topicsCommand })),
    needs: () => ['kafka'],
    usage: { actions: ['create', 'describe'], maxArguments: 1, values: ['--partitions', '--prefix'] },
  },
  migrate: {
    load: () => import('./commands/migrate.ts').then((m) => ({ help: m.migrateHelp, run: m.migrateCommand })),
    needs: (a) => (a.includes('--mysql-only') ? ['mysql'] : ['mysql', 'clickhouse']),
    usage: { switches: ['--mysql-only'] },
  },
  archive: {
    load: () => import('./commands/archive.ts').then((m) => ({ help: m.archiveHelp, run: m.archiveCommand })),
    needs: () => ['mysql'],
    usage: { values: ['--days', '--batch'] },
  },
  run: {
    load: () => import('./commands/run.ts').then((m) => ({ help: m.runHelp, run: m.runCommand })),
    usage: { values: ['--stages', '--instances'], switches: ['--receiver'] },
  },
  receiver: {
    load: () => import('./commands/receiver.ts').then((m) => ({ help: m.receiverHelp, run: m.receiverCommand })),
    usage: {},
  },
  demo: {
    load: () => import('./commands/demo.ts').then((m) => ({ help: m.demoHelp, run: m.demoCommand })),
    usage: { values: ['--users', '--messages', '--seconds', '--instances'] },
  },
  status: {
    load: () => import('./commands/status.ts').then((m) => ({ help: m.statusHelp, run: m.statusCommand })),
    needs: () => ['kafka'],
    usage: { values: ['--app', '--stage', '--metrics'], switches: ['--json'] },
  },
  apps: {
    load: () => import('./commands/apps.ts').then((m) => ({ help: m.appsHelp, run: m.appsCommand })),
    usage: { actions: ['reload', 'version'], maxArguments: 1, values: ['--metrics'], switches: ['--json'] },
  },
  tokens: {
    load: () => import('./commands/tokens.ts').then((m) => ({ help: m.tokensHelp, run: m.tokensCommand })),
    needs: (a) => (a[0] === 'invalidate' ? ['mysql', 'kafka', 'registry'] : ['mysql']),
    usage: { actions: ['show', 'invalidate'], maxArguments: 2, values: ['--device', '--vendor', '--reason'] },
  },
  replay: {
    load: () => import('./commands/replay.ts').then((m) => ({ help: m.replayHelp, run: m.replayCommand })),
    needs: () => ['mysql', 'kafka', 'registry'],
    usage: { values: ['--since', '--until', '--from', '--uid', '--vendor', '--app'], switches: ['--dry-run'] },
  },
  trace: {
    load: () => import('./commands/trace.ts').then((m) => ({ help: m.traceHelp, run: m.traceCommand })),
    needs: () => ['clickhouse', 'mysql'],
    usage: { values: ['--conv', '--since'], switches: ['--json'], maxArguments: 1 },
  },
  arrival: {
    load: () => import('./commands/arrival.ts').then((m) => ({ help: m.arrivalHelp, run: m.arrivalCommand })),
    needs: () => ['clickhouse'],
    usage: { values: ['--since', '--by'] },
  },
  config: {
    load: () => import('./commands/config.ts').then((m) => ({ help: m.configHelp, run: m.configCommand })),
    usage: { switches: ['--markdown'] },
  },
  entry: {
    load: () => import('./commands/entry.ts').then((m) => ({ help: m.entryHelp, run: m.entryCommand })),
    needs: (a) => (a[0] === 'keys' ? ['mysql'] : ['mysql', 'kafka', 'registry', 'clickhouse']),
    usage: { values: ['--rate'], maxArguments: 3 },
  },
  campaigns: {
    load: () => import('./commands/campaigns.ts').then((m) => ({ help: m.campaignsHelp, run: m.campaignsCommand })),
    needs: (a) => (a[0] === 'show' ? ['mysql', 'clickhouse'] : ['mysql', 'clickhouse', 'kafka', 'registry']),
    usage: { actions: ['show', 'cancel'], values: ['--sender'], maxArguments: 2 },
  },
  repartition: {
    load: () => import('./commands/repartition.ts').then((m) => ({ help: m.repartitionHelp, run: m.repartitionCommand })),
    needs: (a) => (a[0] === 'prepare' ? ['kafka', 'registry'] : ['kafka']),
    usage: {
      actions: ['prepare', 'check', 'cutover'],
      maxArguments: 1,
      values: ['--to', '--to-prefix', '--to-app', '--from-prefix', '--from-app', '--quiet-ms'],
    },
  },
};
