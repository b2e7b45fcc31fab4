/**
 * Where a vendor receipt is joined to its submission (docs/design.md, "receipts and tokens").
 *
 * A push names its recipient in the vendor's callback parameter (HMS `bi_tag`, Xiaomi and vivo
 * `callback.param`, OPPO `call_back_parameter`), which the vendor echoes in every receipt about
 * it. Such a receipt is keyed by that uid, and joined beside the push's ACCEPTED outcome in the
 * receipts application's uid-keyed sub-topology: the acceptance costs no record of its own. A push
 * that cannot name its recipient (a campaign's push, sent as one multi-token request whose one
 * parameter cannot name every recipient; a uid too long for the parameter) is joined by the
 * vendor message id, through push.receipts.by-message, as before.
 *
 * The fan-out applies the rule (`pushRecipientParam`) when it builds the vendor message, and
 * says so on the push's ACCEPTED outcome (`receipts_by_uid`), which the receipts application
 * follows: an outcome written before the field existed (its receipts name no one) is joined by the
 * vendor message id, as its receipts are.
 */

const PREFIX = 'uid:';

/** The longest callback parameter every receipt vendor takes, in UTF-8 bytes (Xiaomi and vivo `callback.param`: 64). */
export const RECIPIENT_PARAM_MAX_BYTES = 64;

/** The callback parameter naming `uid`, or undefined when it does not fit. */
export function recipientParam(uid: string): string | undefined {
  const param = PREFIX + uid;
  return uid.length > 0 && Buffer.byteLength(param) <= RECIPIENT_PARAM_MAX_BYTES ? param : undefined;
}

/** The uid a callback parameter names; undefined for any other parameter (a task id, a collapse id, empty). */
export function recipientOfParam(param: unknown): string | undefined {
  if (typeof param !== 'string' || !param.startsWith(PREFIX) || param.length === PREFIX.length) return undefined;
  return param.slice(PREFIX.length);
}

/**
 * The callback parameter a push names its recipient with, or undefined when its receipts name no
 * one: a campaign's push (campaign pushes carry nothing of their recipient but the token,
 * processors/fan-out/records.ts `pushMessage`), or a uid that does not fit.
 */
export function pushRecipientParam(p: { readonly uid: string; readonly business?: { readonly campaign_id: string | null } | null }): string | undefined {
  return p.business?.campaign_id ? undefined : recipientParam(p.uid);
}

/** `{ recipient }` when the callback parameter names one, else nothing: for a receipt parser's result. */
export function recipientField(param: unknown): { recipient?: string } {
  const uid = recipientOfParam(param);
  return uid === undefined ? {} : { recipient: uid };
}

/**
 * The key of a verified callback on push.receipts.raw: the uid its receipts name when they all name
 * the same one, else the vendor (a batch about several users, or receipts naming no one). The
 * receiver keys with the producer's default partitioner, as every stage does, so a callback keyed by
 * its recipient lands on that user's partition and the receipts application joins it in the task
 * that reads the user's outcomes, with no push.receipts.by-uid record (pipeline/apps/receipts.ts).
 */
export function receiptRawKey(vendor: string, receipts: readonly { readonly recipient?: string }[]): string {
  const recipient = receipts[0]?.recipient;
  return recipient !== undefined && receipts.every((r) => r.recipient === recipient) ? recipient : vendor;
}
