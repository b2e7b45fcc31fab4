import { trace, type TraceLine } from '../../pipeline/trace.ts';
import { UsageError } from '../args.ts';

export const traceHelp = `pushctl trace <uid> [--conv C] [--since 24h] [--json]

  why a user got (or did not get) each notification: a timeline of everything the pipeline
  decided for the user, from the ClickHouse events (push_events), the push tasks (im_push_task)
  and the token state (im_push_token). Each line says why in words a support engineer can read
  to the user: the message persisted, the online judgement (acknowledged on an online device),
  merges (first of a burst, merged into, sent as the update), quiet hours, mute, quota, the
  vendor's answer on every device, retries, receipts and token invalidations.
  --conv C     one conversation only
  --since D    how far back (90m, 24h, 7d; default 24h)
  --json       one JSON object per line: time, msg_id, conv_id, seq, device_id, stage, outcome,
               reason, vendor, merge, words, facts (the recorded why: heartbeat age, hold window,
               quiet hours and zone, mention override, private mode, channel and why; stable
               fields). Tokens appear as fingerprints at most.`;

/** One line of text: the time, what it is about, and why, as a sentence. */
export function formatLine(l: TraceLine): string {
  const about = [l.msg_id && l.stage !== 'persisted' ? `message ${l.msg_id}` : '', l.device_id ? `device ${l.device_id}` : ''].filter(Boolean).join(', ');
  const sentence = l.words.charAt(0).toUpperCase() + l.words.slice(1);
  return `${l.time.replace('T', ' ').replace('Z', '')} UTC  ${about ? `[${about}] ` : ''}${sentence}.`;
}

export async function traceCommand(args: string[]): Promise<number> {
  const option = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const uid = args.find((a, i) => !a.startsWith('--') && (i === 0 || !['--conv', '--since'].includes(args[i - 1]!)));
  if (!uid) throw new UsageError("trace needs the user's uid (pushctl trace <uid>)");
  const conv = option('--conv');
  const since = option('--since') ?? '24h';
  const lines = await trace({ uid, since, ...(conv === undefined ? {} : { conv }) });
  if (args.includes('--json')) {
    for (const l of lines) console.log(JSON.stringify(l));
    return 0;
  }
  const devices = new Set(lines.filter((l) => l.device_id).map((l) => l.device_id));
  const messages = new Set(lines.filter((l) => l.stage === 'persisted').map((l) => l.msg_id));
  console.log(
    `Trace of user ${uid}${conv === undefined ? '' : ` in conversation ${conv}`} over the last ${since}: ${messages.size} message(s), ${devices.size} device(s), times in UTC.`,
  );
  if (lines.length === 0)
    console.log(
      'Nothing was recorded for this user in that time: no message of theirs reached the push pipeline (check the uid, or look further back with --since 7d).',
    );
  for (const l of lines) console.log(formatLine(l));
  return 0;
}
