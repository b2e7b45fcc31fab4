import type { CodeTable } from '../outcomes.ts';

/**
 * OPPO PUSH return codes (int `code`, also per-item `errorCode` in batches) → outcome
 * (docs/vendors.md, Sources). Missing or invalid arguments, pictures and category fields are
 * `payload-rejected`.
 */
export const OPPO_CODES: CodeTable = {
  '-2': 'rate-limited',
  '-1': 'retryable',
  '0': 'accepted',
  '11': 'auth-refresh',
  '12': 'permanent',
  '13': 'rate-limited',
  ...Object.fromEntries(Array.from({ length: 12 }, (_, i) => [String(14 + i), 'permanent' as const])),
  '26': 'permanent',
  '27': 'permanent',
  '28': 'permanent',
  '29': 'auth-refresh',
  '30': 'permanent',
  '31': 'permanent',
  '32': 'permanent',
  '33': 'quota-exhausted',
  '34': 'quota-exhausted',
  '40': 'payload-rejected',
  '41': 'payload-rejected',
  '51': 'payload-rejected',
  '55': 'rate-limited',
  '59': 'permanent',
  '67': 'payload-rejected',
  '10000': 'dead-token',
  '10001': 'dead-token',
  '10002': 'dead-token',
  '10003': 'dead-token',
};

/**
 * Receipt `eventType` → receipt kind. OPPO documents only that `param` is echoed; `push_arrive`
 * is the best-known arrival event, `regid_invalid` this project's name for an invalid target.
 */
export const OPPO_RECEIPT_EVENTS: Readonly<Record<string, 'delivered' | 'failed' | 'dead-token'>> = {
  push_arrive: 'delivered',
  regid_invalid: 'dead-token',
};
