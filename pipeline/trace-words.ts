/**
 * The words of `pushctl trace` (pipeline/trace.ts): what one push_events row means, said as a
 * support engineer would tell the user, with the facts the stages recorded in its `detail`
 * (processors/model/outcomes.ts: heartbeat age, hold window, quiet hours in the user's zone,
 * mention override, private mode, the channel chosen and why).
 */
import { parseDetail } from '../processors/model/outcomes.ts';
import { vendorModuleOf } from '../sinks/vendors/modules.ts';
import type { TraceEvent, TraceLine } from './trace.ts';

/** A vendor's display name (its module's `name`, sinks/vendors/modules.ts). */
export const vendorName = (v: string) => vendorModuleOf(v)?.name ?? (v || 'the vendor');
const vendorList = (list: string) => list.split(',').filter(Boolean).map(vendorName).join(', ');

/** What a fan-out or receipt failure reason means, in words. */
const FAILURE_WORDS: Readonly<Record<string, string>> = {
  rate_limited: 'the vendor throttled the request',
  quota: "the app's daily quota on this vendor was used up",
  payload_too_large: 'the notification was too large for the vendor',
  payload_rejected: 'the vendor refused a field of the notification',
  unknown_code: 'the vendor answered with a code we do not know',
  auth_failed: "the vendor refused the app's credentials",
  permanent: 'the vendor refused the request for good',
  retries_exhausted: 'the vendor kept failing until every retry was used',
  vendor_unreachable: 'the vendor could not be reached (the request never got to it)',
  max_age_exceeded: 'the vendor kept failing until the message was too old to push',
  parked_evicted: 'it waited too long for a retry while the push service was overloaded',
  no_adapter: 'the app has no account with that vendor',
  duplicate: 'it had already been sent once',
};

/** The online judgement of a pushed message (push-merged.presence, carried as `on`). */
const PRESENCE_WORDS: Readonly<Record<string, string>> = {
  OFFLINE: 'the device was offline (no live connection to the IM server)',
  HALF_OPEN: 'the device looked online but did not acknowledge the message within the hold window (a half-open connection)',
  SUSPECT: 'the device looked online but an earlier message had gone unacknowledged, so it was pushed at once',
  BACKGROUND: 'the app was in the background',
};

const ms = (n: number) => `${Math.max(0, Math.round(n))} ms`;
const tries = (n: number) => (n > 1 ? ` (it took ${n} attempts)` : '');
const ago = (n: string | undefined) => (n === undefined ? 'no heartbeat was ever received' : `its last heartbeat was ${ms(Number(n))} before`);

/** Why the push went through this vendor, from the dispatch's detail (`ch`, `why`, `skip`). */
function channelWords(f: Record<string, string>, vendor: string): string {
  if (!f.ch) return '';
  if (f.ch !== vendor) return `; sent through ${vendorName(vendor)}, the device's next channel after ${vendorName(f.ch)} failed`;
  switch (f.why) {
    case 'only':
      return `; sent through ${vendorName(vendor)}, the device's only push token`;
    case 'maker':
      return `; sent through ${vendorName(vendor)}, the channel of the device's maker`;
    case 'quota':
      return `; sent through ${vendorName(vendor)} because ${vendorList(f.skip ?? '')} had used up today's quota (re-routed)`;
    default:
      return `; sent through ${vendorName(vendor)}, the first of the device's channels in the fallback order`;
  }
}

/** The rest of the why of a push: online judgement, channel, mention override, generic text. */
function pushContext(f: Record<string, string>, vendor: string): string {
  const parts = [
    f.on && PRESENCE_WORDS[f.on] ? `; ${PRESENCE_WORDS[f.on]}${f.hb === undefined ? '' : `, ${ago(f.hb)}`}` : '',
    f.deferred ? "; it was held through the user's quiet hours and sent when they ended" : '',
    channelWords(f, vendor),
    f.over ? `; the @mention (${f.mention ?? 'mention'}) overrode the user's ${f.over.replace('dnd', 'quiet hours').replace(',', ' and ')}` : '',
    f.private ? '; the user is in private mode, so only the generic text was shown' : '',
    f.sensitive ? '; the conversation is sensitive, so only the generic text was shown' : '',
  ];
  return parts.join('');
}

/** The words of one push_events row. `merge` is the row's place in a burst, `mergedCount` the messages merged into its conversation. */
export function eventWords(e: TraceEvent, merge: TraceLine['merge'], mergedCount: number): string {
  const v = vendorName(e.vendor);
  const f = parseDetail(e.detail);
  const since = e.persisted_ms !== null ? e.event_ms - e.persisted_ms : null;
  const code = e.code ? ` (code ${e.code})` : '';
  if (e.source === 'receipt') {
    if (e.kind === 'delivered')
      return `${v} reported the notification delivered to the device${since === null && e.latency_ms === null ? '' : ` ${ms(e.latency_ms ?? since!)} after the message`}`;
    if (e.kind === 'dead_token')
      return `${v} reported the device's push token is no longer valid${code} (the app was uninstalled or its token expired): the token was marked invalid`;
    return `${v} reported it could not deliver the notification to the device${code}`;
  }
  switch (`${e.kind}/${e.reason}`) {
    case 'suppressed/online_ack':
      if (f.ack === 'before') return `not pushed: the device was online (${ago(f.hb)}) and had acknowledged the message before the push service saw it`;
      return `not pushed: the device was online and acknowledged the message${since === null ? '' : ` ${ms(since)} later`}${
        f.hold ? ` (${ago(f.hb)}; a push waits up to ${ms(Number(f.hold))} for the acknowledgement)` : ''
      }`;
    case 'suppressed/read':
      return 'not pushed: the user read the conversation before the notification went out';
    case 'suppressed/background_cooldown':
      return 'not pushed: the app was in the background and the device had been woken less than 10 s before';
    case 'suppressed/dnd':
      if (f.qh)
        return `not pushed: the message arrived during the user's quiet hours (${f.qh.replace('-', ' to ')} in ${f.tz ?? 'the user’s zone'}; it was ${f.local ?? '?'} there)${
          f.mention ? `; the @mention does not override quiet hours in this app` : ''
        }`;
      return "not pushed: the message arrived during the user's quiet hours (do not disturb, in the user's time zone)";
    case 'suppressed/mute':
      return `not pushed: the user muted this conversation${f.mention ? '; the @mention does not override mute in this app' : ''}`;
    case 'dropped/no_token':
      return e.device_id
        ? 'not pushed: the device has no valid push token for this app (it never registered one, or every token was invalidated)'
        : 'not pushed: none of the user’s devices has a valid push token for this app';
    case 'dropped/app_removed':
      return 'not pushed: the app had been removed from the vendor apps file when the push was due (its device tokens are kept)';
    case 'dropped/quota':
      return `not pushed: every push channel of the device (${f.skip ? vendorList(f.skip) : `${v} first`}) had used up today's quota`;
    case 'merged/merged':
      return f.by
        ? `not pushed on its own: merged into the notification for seq ${f.by} of this conversation (the messages of a conversation within ${ms(Number(f.win ?? 0))} of a burst's first push go out as one update)`
        : `not pushed on its own: merged into one notification for this conversation with the messages around it (a burst)`;
  }
  switch (e.kind) {
    case 'accepted': {
      const when = e.latency_ms !== null ? ` ${ms(e.latency_ms)} after the message` : '';
      const context = pushContext(f, e.vendor);
      if (merge === 'leading')
        return `pushed: ${v} accepted the notification${when}${tries(e.attempts)}; it was the first of a burst, pushed at once${context}`;
      if (merge === 'trailing')
        return `pushed: ${v} accepted the notification${when}${tries(e.attempts)}; it was the update for the burst, sent when its merge window closed, covering the ${mergedCount} message(s) merged into it${context}`;
      return `pushed: ${v} accepted the notification${when}${tries(e.attempts)}${context}`;
    }
    case 'submitted':
      return `sent to ${v}; no answer recorded yet`;
    case 'dead_token':
      return `${v} refused the device's push token${e.token_hash ? ` (fingerprint ${e.token_hash.slice(0, 10)})` : ''} as no longer valid${code}: the token was marked invalid and the next channel of the device, if any, was tried`;
    case 'throttled':
      return `${v} throttled the request${code}: ${e.reason === 'quota' ? "the app's daily quota there was used up, the next channel was tried" : 'it was retried later or on another channel'}`;
    case 'failed':
      return `not delivered by ${v}: ${FAILURE_WORDS[e.reason] ?? `the request failed (${e.reason || 'no reason recorded'})`}${code}${tries(e.attempts)}`;
    case 'skipped_duplicate':
      return `not sent again: the notification had already been sent to ${v} (a replay or a retry)`;
    case 'suppressed':
      return `not pushed: ${e.reason === 'read' ? 'the user read the conversation before the notification went out' : `suppressed (${e.reason})`}`;
    case 'dropped':
      return `not pushed: ${FAILURE_WORDS[e.reason] ?? `dropped (${e.reason})`}`;
    default:
      return `${e.kind}${e.reason ? ` (${e.reason})` : ''}`;
  }
}
