import type { HmsAppConfig } from './index.ts';
import { notifyId } from '../../../processors/model/ids.ts';
import type { PushMessage } from '../../../processors/fan-out/vendor-port.ts';
import { fitJsonPayload, type NotificationText } from '../text.ts';

/**
 * HMS payload limits (docs/vendors.md, "Payload limits"): the message body excluding the tokens is
 * at most 4096 bytes (80300008 above it), counted here as the UTF-8 bytes of
 * `{"validate_only":false,"message":{...}}` without `token`. Push Kit documents no separate limit
 * for the notification title and body; they share what the rest leaves.
 */
export const HMS_PAYLOAD_LIMITS = { maxBytes: 4096 } as const;

type HmsPayloadConfig = Pick<HmsAppConfig, 'category' | 'receiptId' | 'badgeClass'>;

function render(m: PushMessage, config: HmsPayloadConfig, text: NotificationText): Record<string, unknown> {
  return {
    data: JSON.stringify(m.data),
    android: {
      category: m.classification?.category ?? config.category,
      urgency: 'HIGH',
      ttl: `${Math.max(1, m.ttlSeconds)}s`,
      ...(config.receiptId ? { receipt_id: config.receiptId } : {}),
      ...(m.recipient ? { bi_tag: m.recipient } : {}),
      notification: {
        title: text.title,
        body: text.body,
        click_action: { type: 3 },
        tag: m.collapseId,
        notify_id: notifyId(m.collapseId),
        importance: m.silent ? 'LOW' : 'NORMAL',
        default_sound: !m.silent,
        badge: { set_num: Math.min(99, Math.max(0, m.badge)), ...(config.badgeClass ? { class: config.badgeClass } : {}) },
      },
    },
  };
}

/** The body as counted (and sent, without tokens). */
export const hmsCountedBody = (message: Record<string, unknown>): string => JSON.stringify({ validate_only: false, message });

/**
 * The `message` object without tokens, title and body cut by grapheme clusters so the counted
 * body fits `HMS_PAYLOAD_LIMITS.maxBytes`; uncut when the other fields alone are too large (the
 * caller answers payload-too-large without a request).
 */
export function hmsMessage(m: PushMessage, config: HmsPayloadConfig): Record<string, unknown> {
  const fitted = fitJsonPayload({ title: m.title, body: m.body }, HMS_PAYLOAD_LIMITS.maxBytes, (text) => hmsCountedBody(render(m, config, text)));
  return render(m, config, fitted?.text ?? m);
}
