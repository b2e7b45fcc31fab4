import { parseAppsConfig } from '../../sinks/vendors/apps-config.ts';
import { createVendorRegistry, type VendorRegistry } from '../../sinks/vendors/registry.ts';
import type { ReceiptAppConfig } from '../../receipts/config.ts';

export const TEST_APP = 'im-test';

/** Receipt credentials of the test app, as the vendors' consoles would hold them. */
export const RECEIPT_SECRETS = {
  hms: { callbackUsername: 'push-receipts', callbackKey: 'hms-callback-key-0123456789' },
  xiaomi: 'xiaomi-shared-secret-0123456789',
  oppo: 'oppo-shared-secret-0123456789ab',
  vivo: 'vivo-shared-secret-0123456789ab',
} as const;

/** Receipt routes for `appIds` (default the test app), each with the credentials above. */
export function receiptApps(appIds: readonly string[] = [TEST_APP]): ReceiptAppConfig[] {
  return appIds.map((appId) => ({
    appId,
    vendors: {
      hms: { kind: 'hms-hmac', credentials: RECEIPT_SECRETS.hms },
      xiaomi: { kind: 'shared-secret', sharedSecret: RECEIPT_SECRETS.xiaomi },
      oppo: { kind: 'shared-secret', sharedSecret: RECEIPT_SECRETS.oppo },
      vivo: { kind: 'shared-secret', sharedSecret: RECEIPT_SECRETS.vivo },
    },
  }));
}

/** A vendor apps file (docs/vendors.md) for the test app; only its adapters' `parseReceipt` is used. */
export const PARSING_APPS = {
  apps: [
    {
      appId: TEST_APP,
      vendors: {
        hms: { clientId: '10001', clientSecret: 'hms-secret' },
        xiaomi: { appSecret: 'mi-secret', packageName: 'im.test', channelId: 'im' },
        oppo: { appKey: 'oppo-key', masterSecret: 'oppo-master', channelId: 'im' },
        vivo: { appId: '20001', appKey: 'vivo-key', appSecret: 'vivo-secret' },
      },
    },
  ],
};

/** A vendor registry whose adapters are used only for `parseReceipt` (no vendor is called). */
export function parsingRegistry(): VendorRegistry {
  return createVendorRegistry(parseAppsConfig(PARSING_APPS));
}

/** The receipt apps file (PUSH_RECEIPTS_CONFIG, receipts/config.ts) with the credentials above. */
export function receiptAppsFile(appIds: readonly string[] = [TEST_APP]): { apps: object[] } {
  return {
    apps: appIds.map((appId) => ({
      appId,
      hms: RECEIPT_SECRETS.hms,
      xiaomi: { sharedSecret: RECEIPT_SECRETS.xiaomi },
      oppo: { sharedSecret: RECEIPT_SECRETS.oppo },
      vivo: { sharedSecret: RECEIPT_SECRETS.vivo },
    })),
  };
}

/** Receipt bodies in each vendor's documented callback format (docs/vendors.md, Receipts and Sources). */
export const receiptBodies = {
  hms: (requestId: string, token: string, status: number, timestamp: number, biTag = '') =>
    JSON.stringify({ statuses: [{ biTag, appid: '10001', token, status, timestamp, requestId }] }),
  xiaomi: (msgId: string, regId: string, type: number, timestamp: number) =>
    new URLSearchParams({ data: JSON.stringify({ [msgId]: { param: '', type, targets: regId, jobkey: '', barStatus: 'Enable', timestamp } }) }).toString(),
  oppo: (messageId: string, regId: string, eventType: string, eventTime: number) =>
    JSON.stringify([{ messageId, appId: 'oppo-app', taskId: messageId, registrationIds: regId, eventTime, eventType, param: '' }]),
  vivo: (taskId: string, regId: string, ackType: number, ackTime: number) => JSON.stringify({ [taskId]: { targets: regId, ackTime, ackType } }),
};
