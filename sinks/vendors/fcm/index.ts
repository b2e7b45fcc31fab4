import { asGiven, NO_CLASSES, type VendorModule } from '../module.ts';
import { jsonSecret, withoutUndefined, type VendorCommon } from '../vendor-config.ts';
import { FcmAdapter } from './adapter.ts';

export interface ServiceAccount {
  readonly project_id: string;
  readonly private_key_id?: string;
  readonly private_key: string;
  readonly client_email: string;
  readonly token_uri: string;
}

export interface FcmAppConfig extends VendorCommon {
  readonly serviceAccount: ServiceAccount;
  /** Override of the OAuth2 token endpoint (else the key file's token_uri). */
  readonly tokenUrl?: string;
}

/** Firebase Cloud Messaging: the generic service, for Android devices of makers without their own; no receipts. */
export const FCM: VendorModule<'fcm', FcmAppConfig, null> = {
  vendor: 'fcm',
  name: 'FCM',
  parseConfig: (read, o, key) => {
    const raw =
      o.serviceAccount !== undefined
        ? o.serviceAccount
        : o.serviceAccountFile !== undefined
          ? jsonSecret(read.secret(o, 'serviceAccount', key), `${key}.serviceAccountFile`)
          : undefined;
    const sa = read.obj(raw, `${key}.serviceAccount`);
    const saKey = `${key}.serviceAccount`;
    return {
      ...read.common(o, key),
      serviceAccount: withoutUndefined({
        project_id: read.str(sa, 'project_id', saKey),
        private_key_id: read.optStr(sa, 'private_key_id', saKey),
        private_key: read.str(sa, 'private_key', saKey),
        client_email: read.str(sa, 'client_email', saKey),
        token_uri: read.str(sa, 'token_uri', saKey, 'https://oauth2.googleapis.com/token'),
      }),
      tokenUrl: read.url(o, 'tokenUrl', key),
    };
  },
  createAdapter: (c, ctx) => new FcmAdapter(c, ctx),
  // A Google service-account key file carries no expiry (a key's expiry, when an organisation policy sets one, lives in Google Cloud, not in the JSON).
  credentialExpiries: () => [],
  channels: { platforms: [], makers: [], generic: true, classes: NO_CLASSES },
  sentText: asGiven,
  receipts: null,
};
