import type { CodeTable } from '../outcomes.ts';

/**
 * HMS Push Kit business codes (a string in the body whatever the HTTP status) → outcome
 * (docs/vendors.md, Sources). 80100000 is partial success: `msg` lists `illegal_tokens`.
 * Parameter, structure, TTL, collapse-key and content refusals are `payload-rejected`.
 */
export const HMS_CODES: CodeTable = {
  '80000000': 'accepted',
  '80100000': 'accepted',
  '80100001': 'payload-rejected',
  '80100003': 'payload-rejected',
  '80100004': 'payload-rejected',
  '80100013': 'payload-rejected',
  '80100016': 'payload-rejected',
  '80100017': 'rate-limited',
  '80100018': 'permanent',
  '80200001': 'auth-refresh',
  '80200003': 'auth-refresh',
  '80200005': 'auth-refresh',
  '80300002': 'permanent',
  '80300007': 'dead-token',
  '80300008': 'payload-too-large',
  '80300010': 'permanent',
  '80300011': 'permanent',
  '80300013': 'permanent',
  '80600003': 'permanent',
  '81000001': 'retryable',
};

/** Bodies without a business code, by HTTP status. 503 is Huawei's flow control. */
export const HMS_STATUS_FALLBACK: CodeTable = {
  '401': 'auth-refresh',
  '500': 'retryable',
  '502': 'retryable',
  '503': 'rate-limited',
  '504': 'retryable',
};

/** Receipt `status` → receipt kind. 2 (app not installed) and 5 (token not valid) kill the token. */
export const HMS_RECEIPT_STATUS: Readonly<Record<string, 'delivered' | 'failed' | 'dead-token'>> = {
  '0': 'delivered',
  '2': 'dead-token',
  '5': 'dead-token',
};
