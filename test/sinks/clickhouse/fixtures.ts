import type { PushOutcomeRecord, PushReceiptRecord } from '../../../sinks/clickhouse/rows.ts';
import { receiptEventId } from '../../../processors/model/ids.ts';

/** A seeded generator, so every run builds the same workload. */
export function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface ArrivalTruth {
  submitted: number;
  arrived: number;
  delivered: number;
  unknown: number;
}

export interface Workload {
  outcomes: PushOutcomeRecord[];
  receipts: PushReceiptRecord[];
  /** Ground truth per `${vendor}|${app}|${hourStartSeconds}`. */
  truth: Map<string, ArrivalTruth>;
  /** Non-submission outcomes (suppressed, merged, dropped) per kind. */
  otherOutcomes: Map<string, number>;
}

const VENDORS = ['hms', 'xiaomi', 'fcm'] as const;
const APPS = ['app-a', 'app-b'] as const;

/**
 * `pairs` submitted (task, device) pairs spread over 3 vendors, 2 apps and 2 hours, with a known
 * fate each: accepted with a delivered / failed / dead-token receipt or none, or rejected at submit
 * (failed, dead token). Plus suppressed, merged and dropped outcomes that are not submissions.
 */
export function buildWorkload(pairs: number, seed = 7, baseMs = Date.UTC(2026, 10, 20, 8, 0, 0)): Workload {
  const random = seeded(seed);
  const outcomes: PushOutcomeRecord[] = [];
  const receipts: PushReceiptRecord[] = [];
  const truth = new Map<string, ArrivalTruth>();
  const otherOutcomes = new Map<string, number>();
  for (let i = 0; i < pairs; i++) {
    const vendor = VENDORS[i % VENDORS.length]!;
    const app = APPS[Math.floor(i / VENDORS.length) % APPS.length]!;
    const at = baseMs + Math.floor(random() * 2 * 3_600_000);
    const hour = Math.floor(at / 3_600_000) * 3600;
    const key = `${vendor}|${app}|${hour}`;
    const t = truth.get(key) ?? { submitted: 0, arrived: 0, delivered: 0, unknown: 0 };
    truth.set(key, t);
    const task = `task-${seed}-${i}`;
    const device = `dev-${i % 97}`;
    const base = {
      task_id: task,
      uid: `u${i % 53}`,
      device_id: device,
      conv_id: `c${i % 11}`,
      seq: i,
      msg_id: `m${i}`,
      app_id: app,
      platform: vendor === 'fcm' ? 'android' : 'android',
      vendor,
      stage: 'fan-out',
      reason: null,
      code: null,
      collapse_id: null,
      attempts: 1,
      persisted_at: at - 40,
      latency_ms: 40,
    };
    const fate = random();
    t.submitted++;
    if (fate < 0.1) {
      outcomes.push({ ...base, event_id: `o-${task}-dead`, status: 'DEAD_TOKEN', code: '80100000', vendor_message_id: null, at });
      continue;
    }
    if (fate < 0.15) {
      outcomes.push({ ...base, event_id: `o-${task}-failed`, status: 'FAILED', reason: 'permanent', vendor_message_id: null, at });
      continue;
    }
    const vmid = `vm-${task}`;
    outcomes.push({ ...base, event_id: `o-${task}-accepted`, status: 'ACCEPTED', vendor_message_id: vmid, at });
    t.arrived++;
    const receiptFate = vendor === 'fcm' ? 1 : random();
    const status = receiptFate < 0.6 ? 'DELIVERED' : receiptFate < 0.7 ? 'FAILED' : receiptFate < 0.75 ? 'DEAD_TOKEN' : undefined;
    if (!status) {
      t.unknown++;
      continue;
    }
    if (status === 'DELIVERED') t.delivered++;
    const rAt = at + 500 + Math.floor(random() * 5000);
    receipts.push({
      event_id: receiptEventId(vendor, vmid, task, device, status),
      vendor,
      vendor_message_id: vmid,
      status,
      code: status === 'DELIVERED' ? '0' : '2',
      at: rAt,
      received_at: rAt + 100,
      matched: true,
      task_id: task,
      uid: base.uid,
      device_id: device,
      app_id: app,
      platform: base.platform,
      conv_id: base.conv_id,
      seq: i,
    });
  }
  for (let i = 0; i < Math.floor(pairs / 4); i++) {
    const status = (['SUPPRESSED', 'MERGED', 'DROPPED'] as const)[i % 3]!;
    const reason = status === 'SUPPRESSED' ? 'dnd' : status === 'MERGED' ? 'merged' : 'quota';
    otherOutcomes.set(status, (otherOutcomes.get(status) ?? 0) + 1);
    outcomes.push({
      event_id: `o-other-${seed}-${i}`,
      task_id: `other-${seed}-${i}`,
      uid: `u${i}`,
      device_id: `dev-${i}`,
      conv_id: 'c',
      seq: i,
      msg_id: `mo${i}`,
      app_id: APPS[i % 2]!,
      platform: null,
      vendor: null,
      stage: 'policy',
      status,
      reason,
      code: null,
      vendor_message_id: null,
      collapse_id: null,
      attempts: 0,
      persisted_at: baseMs,
      at: baseMs + i,
      latency_ms: null,
    });
  }
  return { outcomes, receipts, truth, otherOutcomes };
}

/** The arrival view's rows, one per (vendor, app, hour), as `truth` keys them. */
export const ARRIVAL_VIEW_QUERY =
  'SELECT toUInt32(hour) AS h, vendor, app_id, pairs_submitted, pairs_arrived, pairs_delivered, pairs_unknown, arrival_rate FROM arrival_by_vendor_app_hour';

export interface ArrivalViewRow {
  h: number | string;
  vendor: string;
  app_id: string;
  pairs_submitted: string;
  pairs_arrived: string;
  pairs_delivered: string;
  pairs_unknown: string;
  arrival_rate: number;
}

/** ARRIVAL_VIEW_QUERY's rows keyed like `Workload.truth`, with their arrival rate. */
export function arrivalFromView(rows: readonly ArrivalViewRow[]): Map<string, ArrivalTruth & { rate: number }> {
  return new Map(
    rows.map((r) => [
      `${r.vendor}|${r.app_id}|${Number(r.h)}`,
      {
        submitted: Number(r.pairs_submitted),
        arrived: Number(r.pairs_arrived),
        delivered: Number(r.pairs_delivered),
        unknown: Number(r.pairs_unknown),
        rate: Number(r.arrival_rate),
      },
    ]),
  );
}

/** `truth` summed by one part of its `${vendor}|${app}|${hour}` key: 0 by vendor, 1 by app, 2 by hour. */
export function truthBy(truth: ReadonlyMap<string, ArrivalTruth>, part: 0 | 1 | 2): Map<string, ArrivalTruth> {
  const by = new Map<string, ArrivalTruth>();
  for (const [key, t] of truth) {
    const k = key.split('|')[part]!;
    const a = by.get(k) ?? { submitted: 0, arrived: 0, delivered: 0, unknown: 0 };
    by.set(k, { submitted: a.submitted + t.submitted, arrived: a.arrived + t.arrived, delivered: a.delivered + t.delivered, unknown: a.unknown + t.unknown });
  }
  return by;
}

/** A row of docs/data.md's per-vendor ready query (its first). */
export interface PerVendorRow {
  vendor: string;
  submitted: string;
  arrived_pairs: string;
  delivered_pairs: string;
  unknown_pairs: string;
}

/** The per-vendor query's rows keyed like `truthBy(truth, 0)`. */
export function perVendorFromQuery(rows: readonly PerVendorRow[]): Map<string, ArrivalTruth> {
  return new Map(
    rows.map((r) => [
      r.vendor,
      { submitted: Number(r.submitted), arrived: Number(r.arrived_pairs), delivered: Number(r.delivered_pairs), unknown: Number(r.unknown_pairs) },
    ]),
  );
}
