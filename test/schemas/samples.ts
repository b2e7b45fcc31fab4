/**
 * One representative value per topic schema, used to capture the wire fixtures in
 * test/fixtures/wire (see capture-fixtures.ts) and to check the encoders round-trip.
 */
export const SAMPLES: Record<string, Record<string, unknown>> = {
  'message-persisted': {
    msg_id: 'm-1', conv_id: 'g-42', conv_type: 'GROUP', seq: 9007199254740, sender_uid: 'u-2', uid: 'u-1', unread_cnt: 17,
    title: 'Team chat', summary: 'Lunch at noon?', sensitive: false, mention: 'DIRECT', persisted_at: 1764400000000, app_id: 'im.demo',
  },
  'presence-event': { uid: 'u-1', device_id: 'd-1', kind: 'ACK', conv_id: 'g-42', seq: 12, at: 1764400000123 },
  'token-report': {
    uid: 'u-1', device_id: 'd-1', platform: 'android', vendor: 'hms', app_id: 'im.demo', token: 'tok-not-a-secret', reported_at: 1764400000000,
    state: 'INVALID', source: 'RECEIPT', reason: 'dead_token', manufacturer: 'huawei',
  },
  'user-settings': {
    uid: 'u-1', time_zone: 'Asia/Shanghai', quiet_hours: { start_minute: 1320, end_minute: 480 }, muted_conversations: ['g-7'], private_mode: true, updated_at: 1764400000000,
  },
  'push-candidate': {
    kind: 'TRIGGER', uid: 'u-1', device_id: 'd-1', conv_id: 'g-42', seq: 12, msg_id: 'm-1', conv_type: 'GROUP', sender_uid: 'u-2', unread_cnt: 3,
    title: 'Team chat', summary: 'hi', sensitive: false, mention: 'NONE', persisted_at: 1764400000000, app_id: 'im.demo', presence: 'HALF_OPEN', decided_at: 1764400010000,
  },
  'push-merged': {
    uid: 'u-1', device_id: 'd-1', conv_id: 'g-42', seq: 12, msg_id: 'm-1', conv_type: 'GROUP', sender_uid: 'u-2', unread_cnt: 3, title: 'Team chat', summary: 'hi',
    sensitive: true, mention: 'ALL', persisted_at: 1764400000000, app_id: 'im.demo', kind: 'TRAILING', silent: true, merged_count: 4, collapse_id: 'c0ffee',
    presence: 'OFFLINE', window_start: 1764400000000, decided_at: 1764400005000,
  },
  'push-dispatch': {
    task_id: '4c9c5e1a-0000-5000-8000-000000000000', uid: 'u-1', device_id: 'd-1', conv_id: 'g-42', seq: 12, msg_id: 'm-1', app_id: 'im.demo', platform: 'android',
    channels: [{ vendor: 'hms', token: 'tok-a' }, { vendor: 'fcm', token: 'tok-b' }], title: 'Team chat', body: 'hi', badge: 3, collapse_id: 'c0ffee',
    silent: false, kind: 'LEADING', merged_count: 1, persisted_at: 1764400000000, decided_at: 1764400000050,
  },
  'push-outcome': {
    event_id: 'e-1', task_id: 't-1', uid: 'u-1', device_id: 'd-1', conv_id: 'g-42', seq: 12, msg_id: 'm-1', app_id: 'im.demo', platform: 'ios', vendor: 'apns',
    stage: 'policy', status: 'SUPPRESSED', reason: 'dnd', code: null, vendor_message_id: null, collapse_id: 'c0ffee', attempts: 0,
    persisted_at: 1764400000000, at: 1764400000050, latency_ms: null,
  },
  'receipt-raw': { receipt_id: 'r-1', vendor: 'hms', app_id: 'im.demo', content_type: 'application/json', body: Buffer.from('{"statuses":[]}'), received_at: 1764400000000 },
  'push-receipt': {
    event_id: 'e-2', vendor: 'hms', vendor_message_id: 'vm-1', status: 'DELIVERED', code: '0', at: 1764400001000, received_at: 1764400002000, matched: true,
    task_id: 't-1', uid: 'u-1', device_id: 'd-1', app_id: 'im.demo', platform: 'android', conv_id: 'g-42', seq: 12,
  },
  'push-request': {
    uid: 'u-1', sender: 'order-service', app_id: 'im.demo', idempotency_key: 'order-77:shipped', category: 'REMINDER', priority: 'HIGH', title: null, body: null,
    template_id: 'order_shipped', template_params: { order: '77' }, data: { link: 'app://orders/77' }, device_id: null, collapse_key: 'order-77',
    expire_at: 1764403600000, campaign_id: null, requested_at: 1764400000000,
  },
  'push-campaign': {
    campaign_id: 'c-9', action: 'CREATE', sender: 'marketing', app_id: 'im.demo', category: 'CAMPAIGN', priority: 'LOW', title: 'Sale', body: 'Today only',
    template_id: null, template_params: {}, data: {}, collapse_key: 'sale', expire_at: null, uids: ['u-1', 'u-2'], uid_file: null, requested_at: 1764400000000,
  },
  'dlq-envelope': {
    source_topic: 'im.message.persisted', source_partition: 3, source_offset: '12345678901234', stage: 'decisions', error_code: 'DESERIALIZATION',
    error_message: 'unknown magic byte', key: Buffer.from('u-1'), value: Buffer.from([0, 1, 2]), headers: { origin: 'test' }, timestamp: 1764400000000, failed_at: 1764400000100,
  },
};
