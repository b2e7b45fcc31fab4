import type { CodeTable } from '../outcomes.ts';

/**
 * APNs `reason` → outcome (docs/vendors.md, Sources; Apple's "Handling notification responses
 * from APNs"). 400 BadDeviceToken is dead only when the environment is right, which the app's
 * configuration asserts; DeviceTokenNotForTopic / TopicDisallowed are permanent token rejections.
 * Refusals of a header or body field are `payload-rejected`: the message's fault, not the token's.
 * BadCertificate / BadCertificateEnvironment refuse the app's provider certificate (expired, revoked,
 * not Apple's, the wrong environment): `auth-failed`, a credential fault that never counts against
 * the token.
 */
export const APNS_REASONS: CodeTable = {
  BadCollapseId: 'payload-rejected',
  BadDeviceToken: 'dead-token',
  BadExpirationDate: 'payload-rejected',
  BadMessageId: 'payload-rejected',
  BadPriority: 'payload-rejected',
  BadTopic: 'permanent',
  DeviceTokenNotForTopic: 'dead-token',
  DuplicateHeaders: 'payload-rejected',
  IdleTimeout: 'retryable',
  InvalidPushType: 'permanent',
  MissingDeviceToken: 'permanent',
  MissingTopic: 'permanent',
  PayloadEmpty: 'payload-rejected',
  TopicDisallowed: 'dead-token',
  BadCertificate: 'auth-failed',
  BadCertificateEnvironment: 'auth-failed',
  ExpiredProviderToken: 'auth-refresh',
  Forbidden: 'permanent',
  InvalidProviderToken: 'auth-failed',
  MissingProviderToken: 'auth-failed',
  UnrelatedKeyIdInToken: 'auth-failed',
  BadEnvironmentKeyIdInToken: 'auth-failed',
  BadPath: 'permanent',
  MethodNotAllowed: 'permanent',
  Unregistered: 'dead-token',
  ExpiredToken: 'dead-token',
  PayloadTooLarge: 'payload-too-large',
  TooManyProviderTokenUpdates: 'rate-limited',
  TooManyRequests: 'rate-limited',
  InternalServerError: 'retryable',
  ServiceUnavailable: 'retryable',
  Shutdown: 'retryable',
};

/** When the body carries no known reason: by HTTP status. */
export const APNS_STATUS_FALLBACK: CodeTable = {
  '400': 'permanent',
  '403': 'auth-failed',
  '404': 'permanent',
  '405': 'permanent',
  '410': 'dead-token',
  '413': 'payload-too-large',
  '429': 'rate-limited',
  '500': 'retryable',
  '503': 'retryable',
};
