import { NO_ANSWER, type OutcomeKind, type SubmitOutcome } from '../../processors/fan-out/vendor-port.ts';

/**
 * How one vendor code maps onto the shared outcome model. `auth-refresh` is internal to adapters:
 * the credential is refreshed once and the request resent once; a second `auth-refresh` becomes
 * `auth-failed`.
 */
export type CodeRule = OutcomeKind | 'auth-refresh';

/** A vendor's code table: its own code (as a string) → rule. Unknown codes fall to the adapter's default. */
export type CodeTable = Readonly<Record<string, CodeRule>>;

/** Looks a code up in a table; codes it does not hold get `fallback` (`unknown-code` unless said otherwise). */
export function ruleFor(table: CodeTable, code: string, fallback: CodeRule = 'unknown-code'): CodeRule {
  return Object.hasOwn(table, code) ? table[code]! : fallback;
}

/** Builds the outcome for a rule. `auth-refresh` that survived the resend ends here as `auth-failed`. */
export function outcomeOf(rule: CodeRule, code: string, extra: { retryAfterMs?: number; vendorMessageId?: string } = {}): SubmitOutcome {
  switch (rule) {
    case 'accepted':
      return { kind: 'accepted', vendorMessageId: extra.vendorMessageId ?? '' };
    case 'auth-refresh':
    case 'auth-failed':
      return { kind: 'auth-failed', code };
    case 'rate-limited':
      return extra.retryAfterMs === undefined ? { kind: 'rate-limited', code } : { kind: 'rate-limited', code, retryAfterMs: extra.retryAfterMs };
    case 'retryable':
      return extra.retryAfterMs === undefined ? { kind: 'retryable', code } : { kind: 'retryable', code, retryAfterMs: extra.retryAfterMs };
    case 'dead-token':
    case 'quota-exhausted':
    case 'payload-too-large':
    case 'payload-rejected':
    case 'permanent':
    case 'unknown-code':
      return { kind: rule, code };
  }
}

/** The outcome for a call that got no answer; `written`: the request may have reached the vendor. */
export function noAnswer(written: boolean, retryAfterMs?: number): SubmitOutcome {
  const code = written ? NO_ANSWER.unknown : NO_ANSWER.notSent;
  return retryAfterMs === undefined ? { kind: 'retryable', code } : { kind: 'retryable', code, retryAfterMs };
}

/** Parses an HTTP Retry-After header (delta seconds or HTTP date) into ms from now. */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number = Date.now()): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined || raw.trim() === '') return undefined;
  if (/^\d+$/.test(raw.trim())) return Number(raw.trim()) * 1000;
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** An answer's Retry-After as outcomeOf's `extra`: `{ retryAfterMs }`, or nothing when the answer has none. */
export function retryAfterOf(headers: Readonly<Record<string, string | string[] | undefined>>, nowMs: number): { retryAfterMs?: number } {
  const retryAfterMs = parseRetryAfter(headers['retry-after'], nowMs);
  return retryAfterMs === undefined ? {} : { retryAfterMs };
}

/** The rule for an answer that carries no vendor code: 429 is rate-limited, 5xx retryable, anything else unknown. */
export function httpStatusRule(status: number): CodeRule {
  return status === 429 ? 'rate-limited' : status >= 500 ? 'retryable' : 'unknown-code';
}
