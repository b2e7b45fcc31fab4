/**
 * What the takeovers after the run's SIGKILLs sent again (docs/design.md, "Takeover"), from the
 * vendor emulators' recordings (each request, its answer, when, and which worker process sent it)
 * and the im_push_task rows as they were when the killed worker had exited.
 *
 * For each kill, the pushes the killed worker had called whose last call needs no further call
 * (accepted, a dead token, or no answer before the kill; a 429 or 5xx is retried by design):
 * - re-sent after the takeover: another process called the push again after the kill;
 * - without a recorded answer at the kill: the row did not keep that call's answer (not final,
 *   and no answer of that vendor in its trail). Of those, the vendor had answered some before the
 *   kill signal: the answer was on its way back to the worker, or being written, when it died;
 * - re-sent although recorded: a push called again although its row kept the answer. The fan-out
 *   consults the row before calling, so this stays 0, and re-sends never exceed the calls
 *   without a recorded answer.
 */
import mysql from 'mysql2/promise';
import type { ReceivedPush } from '../emulators/index.ts';
import { readEndpoints } from '../common/endpoints.ts';
import { taskId } from '../processors/model/ids.ts';
import { TASK_STATUS } from '../processors/model/task-status.ts';
import type { Scenario } from './scenario.ts';
import { messageOf } from './verify.ts';
import { mysqlClientOptions } from '../common/mysql-url.ts';

/** A task row as the killed worker left it: its status and its recorded answers (channel_trail). */
export interface TaskRowAtKill {
  readonly status: number;
  readonly trail: string | null;
}

/** One SIGKILL: the worker process, when the signal went (epoch ms), and the run's task rows once it had exited. */
export interface Kill {
  readonly pid: number;
  readonly atMs: number;
  readonly rows: ReadonlyMap<string, TaskRowAtKill>;
}

export interface TakeoverCheck {
  readonly kills: number;
  /** Pushes called again by another process after a kill. */
  readonly resent: number;
  /** Pushes whose last call before a kill had no answer recorded on the task row. */
  readonly withoutRecordedAnswer: number;
  /** Of those, the vendor had answered before the kill signal (the answer in transit or being written). */
  readonly answeredByVendorUnrecorded: number;
  /** Pushes called again although the row kept the answer of their call. */
  readonly resentAlthoughRecorded: number;
  /** A few of those, `vendor|token|conv|seq`. */
  readonly examples: string[];
  /** Per kill, in order: re-sent, and without a recorded answer. */
  readonly byKill: Array<{ resent: number; withoutRecordedAnswer: number }>;
}

/** Reads the run's task rows (users `<run>-u…`) from MySQL directly, not through the run's forwarder. */
export async function taskRowsOf(run: string): Promise<Map<string, TaskRowAtKill>> {
  const endpoints = readEndpoints();
  const db = await mysql.createConnection(mysqlClientOptions(endpoints.mysqlUrl, endpoints.mysqlSecurity));
  try {
    const [rows] = await db.query('SELECT task_id, status, channel_trail FROM im_push_task WHERE uid LIKE ?', [`${run}-u%`]);
    return new Map(
      (rows as Array<{ task_id: string; status: number; channel_trail: string | null }>).map((r) => [r.task_id, { status: r.status, trail: r.channel_trail }]),
    );
  } finally {
    await db.end();
  }
}

const pidOf = (r: ReceivedPush) => Number(/\(pid (\d+)\)/.exec(r.client ?? '')?.[1]);

export function checkTakeovers(received: readonly ReceivedPush[], kills: readonly Kill[], scenario: Scenario): TakeoverCheck {
  const deviceOf = new Map(scenario.devices.flatMap((d) => d.tokens.map((t) => [`${t.vendor}|${t.token}`, d] as const)));
  const dead = new Set(scenario.deadTokens.map((t) => t.token));
  const byPush = new Map<string, ReceivedPush[]>();
  for (const r of [...received].sort((a, b) => a.at - b.at)) {
    const m = messageOf(r);
    if (!m) continue;
    const key = `${r.vendor}|${r.token}|${m.convId}|${m.seq}`;
    byPush.set(key, [...(byPush.get(key) ?? []), r]);
  }
  const out = {
    kills: kills.length,
    resent: 0,
    withoutRecordedAnswer: 0,
    answeredByVendorUnrecorded: 0,
    resentAlthoughRecorded: 0,
    examples: [] as string[],
    byKill: [] as TakeoverCheck['byKill'],
  };
  for (const kill of kills) {
    const before = { resent: out.resent, withoutRecordedAnswer: out.withoutRecordedAnswer };
    for (const [key, calls] of byPush) {
      const last = calls.filter((r) => pidOf(r) === kill.pid).at(-1);
      if (!last) continue;
      const answered = last.at <= kill.atMs;
      if (answered && last.answer !== 'accepted' && !dead.has(last.token)) continue; // a refusal that asks for a retry
      const device = deviceOf.get(`${last.vendor}|${last.token}`);
      const m = messageOf(last)!;
      const row = device && kill.rows.get(taskId(device.uid, m.convId, m.seq, device.deviceId));
      const recorded = row !== undefined && (row.status !== TASK_STATUS.pending || (row.trail ?? '').includes(`"vendor":"${last.vendor}"`));
      const resent = calls.some((r) => r.at > kill.atMs && pidOf(r) !== kill.pid);
      if (!recorded) out.withoutRecordedAnswer++;
      if (!recorded && answered) out.answeredByVendorUnrecorded++;
      if (resent) out.resent++;
      if (resent && recorded) {
        out.resentAlthoughRecorded++;
        if (out.examples.length < 5) out.examples.push(key);
      }
    }
    out.byKill.push({ resent: out.resent - before.resent, withoutRecordedAnswer: out.withoutRecordedAnswer - before.withoutRecordedAnswer });
  }
  return out;
}
