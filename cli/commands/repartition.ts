import { readKey } from '../../common/config.ts';
import { CONFIG_KEYS } from '../../common/config-keys.ts';
import { UsageError } from '../args.ts';
import { checkDrained, describeDrain, drained } from '../../pipeline/repartition/drain-check.ts';
import { cutover, NotDrainedError } from '../../pipeline/repartition/cutover.ts';
import { prepareGeneration, repartitionAdmin, type Generation } from '../../pipeline/repartition/generation.ts';

export const repartitionHelp = `pushctl repartition prepare|check|cutover --to N --to-prefix P2 --to-app A2 [--from-prefix P1] [--from-app A1] [--quiet-ms MS]
  (check needs only the old generation's flags)

  Moves the pipeline to N partitions through a new topic generation (docs/operations.md,
  "Growing partitions"): the old generation is PUSH_TOPIC_PREFIX / PUSH_APPLICATION_ID unless
  --from-prefix / --from-app say otherwise; the new one is --to-prefix / --to-app.
  prepare   create the new generation's topics and changelogs with N partitions, register its schemas
  check     whether the old generation is drained and stopped (exit 1 if not, saying why)
  cutover   check, then copy every changelog of the old generation to the new one, each entry to the
            partition of its owner under N partitions, and the tables (push.tokens, push.settings,
            push.campaign-control); then start the new workers with PUSH_PARTITIONS=N
  --quiet-ms  how long the old topics must not grow (default 10000)`;

interface Parsed {
  readonly from: Generation;
  readonly to: Generation;
  readonly partitions: number;
  readonly quietMs: number;
}

/** The flags; `check` needs only the old generation (`onlyFrom`). */
function parse(args: string[], onlyFrom = false, env = process.env): Parsed {
  const flag = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const required = (name: string) => {
    const value = flag(name);
    if (value === undefined) throw new UsageError(`${name} is required`);
    return value;
  };
  const from = {
    prefix: flag('--from-prefix') ?? readKey(env, CONFIG_KEYS.PUSH_TOPIC_PREFIX),
    applicationId: flag('--from-app') ?? readKey(env, CONFIG_KEYS.PUSH_APPLICATION_ID),
  };
  const quiet = flag('--quiet-ms') ?? '10000';
  const quietMs = Number(quiet);
  if (!Number.isInteger(quietMs) || quietMs < 0) throw new UsageError(`--quiet-ms must be a whole number of ms, not ${quiet}`);
  if (onlyFrom) return { from, to: from, partitions: 0, quietMs };
  const to = { prefix: required('--to-prefix'), applicationId: required('--to-app') };
  if (to.prefix === from.prefix) throw new UsageError("--to-prefix must differ from the old generation's prefix (a generation is a new set of topics)");
  if (to.applicationId === from.applicationId)
    throw new UsageError("--to-app must differ from the old generation's application id (new groups and changelogs)");
  const partitions = Number(required('--to'));
  if (!Number.isInteger(partitions) || partitions < 1 || partitions > 256)
    throw new UsageError(`--to must be a whole number of partitions from 1 to 256, not ${flag('--to')}`);
  return { from, to, partitions, quietMs };
}

export async function repartitionCommand(args: string[]): Promise<number> {
  const action = args[0];
  const p = parse(args, action === 'check');
  if (action === 'prepare') {
    const { created } = await prepareGeneration(p.to, p.partitions);
    console.log(`new generation ${p.to.prefix || '(no prefix)'} / ${p.to.applicationId}: ${created.length} topics created with ${p.partitions} partitions`);
    console.log('next: point the producers at the new prefix, let the old workers drain, stop them, then pushctl repartition cutover');
    return 0;
  }
  if (action === 'check') {
    const admin = repartitionAdmin();
    await admin.connect();
    try {
      const report = await checkDrained(admin, p.from, p.quietMs);
      if (drained(report)) {
        console.log(`old generation drained and stopped (groups that ran: ${report.groupsSeen.join(', ') || 'none'})`);
        return 0;
      }
      for (const line of describeDrain(report)) console.log(line);
      return 1;
    } finally {
      await admin.disconnect();
    }
  }
  if (action === 'cutover') {
    try {
      const result = await cutover({ ...p });
      for (const c of result.state)
        console.log(
          `${c.from} → ${c.to}: ${c.read} entries read, ${c.written} records written${c.dropped ? `, ${c.dropped} timers without their entry dropped` : ''}`,
        );
      for (const t of result.tables) console.log(`${t.from} → ${t.to}: ${t.keys} keys, ${t.written} written, ${t.kept} already newer there`);
      console.log(`next: start the workers with PUSH_TOPIC_PREFIX=${p.to.prefix} PUSH_APPLICATION_ID=${p.to.applicationId} PUSH_PARTITIONS=${p.partitions}`);
      return 0;
    } catch (error) {
      if (!(error instanceof NotDrainedError)) throw error;
      console.error(error.message);
      return 1;
    }
  }
  throw new UsageError('an action is required: prepare, check or cutover');
}
