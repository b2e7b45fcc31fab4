/**
 * TypeScript shapes of the topic values, one interface per schemas/*.avsc, each naming its schema in
 * its doc comment. Field names are the Avro field names (snake_case, as on the wire); unions decode
 * to `null` or the value. test/schemas/record-types.test.ts checks every field, its nullability and
 * every enum against the schemas. Keys of every topic are the recipient uid.
 */
export type ConvType = 'SINGLE' | 'GROUP' | 'CHANNEL' | 'SYSTEM';
export type Mention = 'NONE' | 'DIRECT' | 'ALL';
export type PresenceKind = 'HEARTBEAT' | 'CONNECT' | 'DISCONNECT' | 'FOREGROUND' | 'BACKGROUND' | 'EXIT' | 'ACK' | 'READ';
/** Why the online-filter decided to wake a device. */
export type PresenceDecision = 'OFFLINE' | 'HALF_OPEN' | 'SUSPECT' | 'BACKGROUND' | 'READ';

/** im.message.persisted (message-persisted.avsc). */
export interface MessagePersisted {
  msg_id: string;
  conv_id: string;
  conv_type: ConvType;
  seq: number;
  sender_uid: string;
  uid: string;
  unread_cnt: number;
  title: string;
  summary: string;
  sensitive: boolean;
  mention: Mention;
  persisted_at: number;
  app_id: string;
}

/** im.presence (presence-event.avsc). */
export interface PresenceEvent {
  uid: string;
  device_id: string;
  kind: PresenceKind;
  conv_id: string | null;
  seq: number | null;
  at: number;
}

export type TokenState = 'VALID' | 'INVALID';
export type TokenSource = 'CLIENT' | 'FAN_OUT' | 'RECEIPT' | 'SWEEP' | 'OPERATOR';

/** push.tokens (token-report.avsc). */
export interface TokenReport {
  uid: string;
  device_id: string;
  platform: string;
  vendor: string;
  app_id: string;
  token: string;
  reported_at: number;
  state: TokenState;
  source: TokenSource;
  reason: string | null;
  manufacturer: string | null;
}

/** push.settings (user-settings.avsc). */
export interface UserSettings {
  uid: string;
  time_zone: string;
  quiet_hours: { start_minute: number; end_minute: number } | null;
  muted_conversations: string[];
  private_mode: boolean;
  updated_at: number;
  /** Business push categories the user turned off (absent in records written before the field existed). */
  opted_out_categories?: string[];
  /** Business senders the user turned off. */
  muted_senders?: string[];
}

/** The message fields a candidate and a merged notification carry for one device: the persisted message and the device. */
export interface DeviceMessage extends MessagePersisted {
  device_id: string;
}

/** push.candidates (push-candidate.avsc). */
export interface PushCandidate extends DeviceMessage {
  kind: 'TRIGGER' | 'READ';
  presence: PresenceDecision;
  decided_at: number;
  /** Ms since the device's last heartbeat (or CONNECT) when it was judged; null or absent when it never sent one. */
  hb?: number | null;
}

/** push.merged (push-merged.avsc). */
export interface PushMerged extends DeviceMessage {
  kind: 'LEADING' | 'TRAILING';
  silent: boolean;
  merged_count: number;
  collapse_id: string;
  presence: PresenceDecision;
  window_start: number;
  decided_at: number;
  /** The trigger's heartbeat age (PushCandidate.hb). */
  hb?: number | null;
}

export type DispatchKind = 'LEADING' | 'TRAILING' | 'IMMEDIATE' | 'DEFERRED';

export interface DispatchChannel {
  vendor: string;
  token: string;
  /** Vendor-specific message class fields (see push-dispatch.avsc). */
  classification: Record<string, string>;
}

/** push.dispatch (push-dispatch.avsc). */
export interface PushDispatch {
  task_id: string;
  uid: string;
  device_id: string;
  conv_id: string;
  seq: number;
  msg_id: string;
  app_id: string;
  platform: string;
  channels: DispatchChannel[];
  title: string;
  body: string;
  badge: number;
  collapse_id: string;
  silent: boolean;
  kind: DispatchKind;
  merged_count: number;
  persisted_at: number;
  decided_at: number;
  /** Business pushes only (push.dispatch.business); null or absent on IM pushes. */
  business?: BusinessTag | null;
  /** Why this push went out this way (`k=v;...`, processors/model/outcomes.ts); null or absent when not recorded. */
  detail?: string | null;
  /** A business push's custom data from its request (sent to the vendor, never logged); absent or empty on IM pushes. */
  data?: Record<string, string>;
}

/** Who sent a business push and why (push-dispatch and push-outcome `business`). */
export interface BusinessTag {
  sender: string;
  category: string;
  campaign_id: string | null;
  /** Epoch ms after which the push must not be delivered. */
  expire_at: number | null;
}

export type OutcomeStatus = 'SUBMITTED' | 'ACCEPTED' | 'FAILED' | 'DEAD_TOKEN' | 'THROTTLED' | 'MERGED' | 'SUPPRESSED' | 'DROPPED' | 'SKIPPED_DUPLICATE';

/** push.outcomes (push-outcome.avsc). */
export interface PushOutcome {
  event_id: string;
  task_id: string;
  uid: string;
  device_id: string | null;
  conv_id: string;
  seq: number;
  msg_id: string;
  app_id: string;
  platform: string | null;
  vendor: string | null;
  stage: string;
  status: OutcomeStatus;
  reason: string | null;
  code: string | null;
  vendor_message_id: string | null;
  collapse_id: string | null;
  attempts: number;
  persisted_at: number;
  at: number;
  latency_ms: number | null;
  /**
   * Fan-out outcomes about a vendor call: the hash of the token used (`tokenHash`, sha256 hex, first
   * 32 chars). Null or absent elsewhere and in records written before the field existed.
   */
  token_hash?: string | null;
  /** Business pushes only: sender, category and campaign, for accounting. */
  business?: BusinessTag | null;
  /** The facts behind the decision (`k=v;...`, processors/model/outcomes.ts); null or absent when none were recorded. */
  detail?: string | null;
  /**
   * ACCEPTED fan-out outcomes: true when the push named its recipient in the vendor's callback
   * parameter, so its receipts are joined by uid beside this outcome (processors/model/receipt-route.ts).
   * Null or absent elsewhere and in records written before the field existed.
   */
  receipts_by_uid?: boolean | null;
}

/** push.receipts.raw (receipt-raw.avsc). */
export interface ReceiptRaw {
  /** sha256 of vendor and body, hex: duplicate deliveries of one callback share it. */
  receipt_id: string;
  vendor: string;
  app_id: string | null;
  content_type: string | null;
  body: Buffer;
  /** Epoch ms. */
  received_at: number;
}

export type ReceiptStatus = 'DELIVERED' | 'FAILED' | 'DEAD_TOKEN';

/** push.receipts (push-receipt.avsc). */
export interface PushReceipt {
  event_id: string;
  vendor: string;
  vendor_message_id: string;
  status: ReceiptStatus;
  code: string;
  at: number;
  received_at: number;
  matched: boolean;
  task_id: string | null;
  uid: string | null;
  device_id: string | null;
  app_id: string | null;
  platform: string | null;
  conv_id: string | null;
  seq: number | null;
}

export type PushCategory = 'NOTICE' | 'REMINDER' | 'CAMPAIGN';
export type PushPriority = 'HIGH' | 'NORMAL' | 'LOW';
export type CampaignAction = 'CREATE' | 'CANCEL';

/** What a business push shows and carries: shared by a request to one user and a campaign. */
export interface PushContent {
  readonly sender: string;
  readonly app_id: string;
  readonly category: PushCategory;
  readonly priority: PushPriority;
  readonly title: string | null;
  readonly body: string | null;
  readonly template_id: string | null;
  readonly template_params: Readonly<Record<string, string>>;
  readonly data: Readonly<Record<string, string>>;
  readonly collapse_key: string | null;
  readonly expire_at: number | null;
}

/** push.requests (push-request.avsc): one business push to one user. Key: uid. */
export interface PushRequestRecord extends PushContent {
  readonly uid: string;
  readonly idempotency_key: string;
  readonly device_id: string | null;
  readonly campaign_id: string | null;
  readonly requested_at: number;
}

/**
 * push.campaigns and push.campaign-control (push-campaign.avsc): a bulk push (CREATE) or the
 * cancellation of one (CANCEL). Key: campaign_id.
 */
export interface PushCampaignRecord extends PushContent {
  readonly campaign_id: string;
  readonly action: CampaignAction;
  readonly uids: readonly string[];
  readonly uid_file: string | null;
  readonly requested_at: number;
}
