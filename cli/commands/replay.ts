import { parseDuration } from '../../pipeline/duration.ts';
import { replayFailed, replayTasks } from '../../pipeline/replay.ts';
import { UsageError } from '../args.ts';

export const replayHelp = `pushctl replay --since <duration> [--until <duration>] [--vendor V] [--app A] [--dry-run]

  re-submits failed push tasks (im_push_task status 3) whose failure lies in the time range
  (e.g. --since 2h --until 30m: from two hours ago to thirty minutes ago), optionally of one vendor
  or app:
  finds their dispatch records on push.dispatch (a task without one, as the fused pipeline writes
  push.dispatch only as a tap, is rebuilt from its im_push_task row as --from tasks does), keeps
  only channels whose token is still valid in im_push_token (dead tokens are never retried), sets
  the tasks back to pending and produces the dispatches again. The fan-out submits each at most
  once, under the same collapse id.

pushctl replay --from tasks --since <time> [--until <time>] [--uid U] [--vendor V] [--app A] [--dry-run]

  re-sends the push tasks claimed in the time range (--since and --until: a duration back from now
  such as 2h, or an ISO time such as 2026-12-01T10:00:00Z), optionally of one user, vendor or app, from
  im_push_task alone, whatever the topics still hold: each task that was submitted, delivered or
  failed is sent again with the payload (title and summary), unread count and collapse id it was
  first sent with (docs/data.md), through the fan-out like any dispatch, on the device's tokens
  still valid in im_push_token (its last vendor first). Tasks written before those columns existed
  are counted and left out.`;

function option(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

/** A duration back from `now` (2h) or an ISO 8601 time (2026-12-01T10:00:00Z), as epoch ms. */
function timeOption(text: string, flag: string, now: number): number {
  if (/^\d{4}-\d{2}-\d{2}/.test(text)) {
    const at = Date.parse(text);
    if (Number.isNaN(at)) throw new UsageError(`${flag} ${text}: expected a duration such as 2h or an ISO time such as 2026-12-01T10:00:00Z`);
    return at;
  }
  return now - parseDuration(text, flag);
}

/** `pushctl replay --from tasks`: re-sends the tasks of a time range from im_push_task alone. */
async function replayFromTasks(args: string[]): Promise<number> {
  const since = option(args, '--since');
  if (!since) throw new UsageError('--since is required (from when tasks are re-sent, e.g. --since 2h or --since 2026-12-01T10:00:00Z)');
  const until = option(args, '--until');
  const now = Date.now();
  const fromMs = timeOption(since, '--since', now);
  const untilMs = until === undefined ? now : timeOption(until, '--until', now);
  if (fromMs >= untilMs) throw new UsageError(`--since ${since} is not earlier than --until ${until ?? 'now'}: the range would be empty`);
  const uid = option(args, '--uid');
  const vendor = option(args, '--vendor');
  const app = option(args, '--app');
  const replayed = await replayTasks(
    { fromMs, untilMs, ...(uid ? { uid } : {}), ...(vendor ? { vendor } : {}), ...(app ? { app } : {}), dryRun: args.includes('--dry-run'), now },
    {
      onTasks: (count) =>
        console.log(`${count} task(s) in range${uid ? ` for ${uid}` : ''}${vendor ? ` last sent through ${vendor}` : ''}${app ? ` of ${app}` : ''}`),
      onSelected: ({ replayable, noPayload, noToken }) =>
        console.log(
          `${replayable} with their payload and a valid token; ${noPayload} written before the payload column (left out), ${noToken} without a valid token`,
        ),
    },
  );
  if (replayed > 0) console.log(`replayed ${replayed} task(s)`);
  return 0;
}

export async function replayCommand(args: string[]): Promise<number> {
  const from = option(args, '--from') ?? 'topic';
  if (from === 'tasks') return replayFromTasks(args);
  if (from !== 'topic') throw new UsageError(`--from ${from}: expected tasks (im_push_task) or topic (push.dispatch, the default)`);
  const since = option(args, '--since');
  if (!since) throw new UsageError('--since is required (how far back failures count, e.g. --since 2h)');
  const until = option(args, '--until');
  const sinceMs = parseDuration(since, '--since');
  const untilAgoMs = until === undefined ? 0 : parseDuration(until, '--until');
  // Both are durations back from now: the range starts --since ago and ends --until ago.
  if (untilAgoMs >= sinceMs)
    throw new UsageError(
      `--since ${since} is not earlier than --until ${until}: the range starts --since ago and ends --until ago, so --since must be the longer duration`,
    );
  const now = Date.now();
  const vendor = option(args, '--vendor');
  const app = option(args, '--app');
  const replayed = await replayFailed(
    { fromMs: now - sinceMs, untilMs: now - untilAgoMs, ...(vendor ? { vendor } : {}), ...(app ? { app } : {}), dryRun: args.includes('--dry-run'), now },
    {
      onFailed: (count) => console.log(`${count} failed task(s) in range${vendor ? ` for ${vendor}` : ''}${app ? ` of ${app}` : ''}`),
      onDispatches: ({ found, rebuilt, replayable }) =>
        console.log(`${found} dispatch record(s) found, ${rebuilt} rebuilt from im_push_task, ${replayable} with a valid token left`),
    },
  );
  if (replayed > 0) console.log(`replayed ${replayed} task(s)`);
  return 0;
}
