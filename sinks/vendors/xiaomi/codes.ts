import type { CodeTable } from '../outcomes.ts';

/**
 * MiPush `code` (an int in `{"result":"error","code":…}`) → outcome (docs/vendors.md, Sources).
 * The static AppSecret cannot be refreshed, so auth codes end as `auth-failed`. Dead regIds are
 * reported only asynchronously (receipt type 16). Parameter and callback-field refusals are
 * `payload-rejected`.
 */
export const XIAOMI_CODES: CodeTable = {
  '0': 'accepted',
  '-1': 'retryable',
  '1': 'retryable',
  '10001': 'retryable',
  '10002': 'retryable',
  '10003': 'retryable',
  '26003': 'retryable',
  '65029': 'retryable',
  '20301': 'retryable',
  '10008': 'payload-rejected',
  '10016': 'payload-rejected',
  '10017': 'payload-rejected',
  '21305': 'payload-rejected',
  '65011': 'payload-rejected',
  '10027': 'rate-limited',
  '21303': 'rate-limited',
  '26004': 'rate-limited',
  '10034': 'quota-exhausted',
  '10031': 'permanent',
  '21301': 'auth-failed',
  '21302': 'auth-failed',
  '22000': 'auth-failed',
  '22006': 'auth-failed',
  '22007': 'auth-failed',
  '22022': 'permanent',
  '27001': 'permanent',
  '65009': 'payload-too-large',
  '65036': 'payload-rejected',
  '65037': 'payload-rejected',
  '65038': 'payload-rejected',
};

/** Receipt type bits: 1 delivered, 2 clicked, 16 invalid device, 32 disabled, 64 filtered, 128 daily limit, 1024 expired. */
export const XIAOMI_RECEIPT_BITS = { delivered: 1, clicked: 2, invalidDevice: 16, failed: 32 | 64 | 128 | 1024 } as const;

/** The receipt types this adapter asks for in `extra.callback.type`: delivered + every failure bit. */
export const XIAOMI_CALLBACK_TYPE = 1 | 16 | 32 | 64 | 128 | 1024;
