import type { CodeTable } from '../outcomes.ts';

/**
 * FCM HTTP v1 error → outcome, keyed by the FcmError `errorCode` detail, else the google.rpc
 * `status` (docs/vendors.md, Sources). INVALID_ARGUMENT is refined by the adapter: dead token when
 * it concerns the registration token, payload-too-large when the message is too big, else a
 * refused field of the payload.
 */
export const FCM_ERRORS: CodeTable = {
  UNREGISTERED: 'dead-token',
  UNREGISTERED_FID: 'dead-token',
  NOT_FOUND: 'dead-token',
  SENDER_ID_MISMATCH: 'dead-token',
  INVALID_ARGUMENT: 'payload-rejected',
  QUOTA_EXCEEDED: 'rate-limited',
  RESOURCE_EXHAUSTED: 'rate-limited',
  UNAVAILABLE: 'retryable',
  INTERNAL: 'retryable',
  THIRD_PARTY_AUTH_ERROR: 'permanent',
  UNAUTHENTICATED: 'auth-refresh',
  PERMISSION_DENIED: 'permanent',
  UNSPECIFIED_ERROR: 'permanent',
};

/** Bodies without a usable code, by HTTP status (firebase-admin's mapping); any 429 throttles. */
export const FCM_STATUS_FALLBACK: CodeTable = {
  '400': 'permanent',
  '401': 'auth-refresh',
  '403': 'permanent',
  '404': 'dead-token',
  '429': 'rate-limited',
  '500': 'retryable',
  '502': 'retryable',
  '503': 'retryable',
  '504': 'retryable',
};
