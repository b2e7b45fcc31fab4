import type { CodeTable } from '../outcomes.ts';

/**
 * vivo push `result` → outcome (docs/vendors.md, Sources). Only 0, 10096 and 10097 are confirmed
 * by the sources; the auth (10000), regId (10302), frequency (10073) and daily-total (10070/10071)
 * codes are the best-known values, UNCONFIRMED, kept here in one table to correct in one place.
 * 10096 / 10097 (category fields) are `payload-rejected`; results missing here are `unknown-code`
 * (reported by code, never held against the token).
 */
export const VIVO_RESULTS: CodeTable = {
  '0': 'accepted',
  '10000': 'auth-refresh',
  '10070': 'quota-exhausted',
  '10071': 'quota-exhausted',
  '10073': 'rate-limited',
  '10096': 'payload-rejected',
  '10097': 'payload-rejected',
  '10302': 'dead-token',
};

/** `invalidUser(s).status`: 1 unknown regId, 2 uninstalled / unsubscribed → dead; 4 not a test device. */
export const VIVO_INVALID_USER: CodeTable = {
  '1': 'dead-token',
  '2': 'dead-token',
  '4': 'permanent',
};

/** Receipt `ackType` (this project's receipt format, vivo's is UNCONFIRMED): 1 arrived, 2 invalid target, else failed. */
export const VIVO_RECEIPT_ACK: Readonly<Record<string, 'delivered' | 'failed' | 'dead-token'>> = {
  '1': 'delivered',
  '2': 'dead-token',
};
