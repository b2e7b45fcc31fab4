-- Views for the data team (docs/data.md). All counts are exact distinct counts over
-- (task_id, device_id[, vendor]) pairs, so duplicate rows never change a figure.
--
-- A pair is *submitted* when the fan-out reported a vendor answer for it: an outcome row with a
-- vendor and kind submitted, accepted, failed, dead_token or throttled. It *arrived* when the
-- vendor accepted it or a receipt reported it delivered; *delivered* needs the receipt;
-- *unknown* is a vendor-accepted pair with no receipt yet.

-- One row per (task_id, device_id, vendor): the state of one submission to one vendor.
CREATE VIEW IF NOT EXISTS push_submissions AS
SELECT
    task_id,
    device_id,
    vendor,
    any(app_id) AS app_id,
    max(platform) AS platform,
    minIf(event_time, source = 'outcome' AND kind IN ('submitted', 'accepted', 'failed', 'dead_token', 'throttled')) AS submitted_at,
    max(source = 'outcome' AND kind IN ('submitted', 'accepted', 'failed', 'dead_token', 'throttled')) AS submitted,
    max(kind IN ('accepted', 'delivered')) AS arrived,
    max(kind = 'accepted') AS accepted,
    max(source = 'receipt' AND kind = 'delivered') AS delivered,
    max(source = 'receipt' AND kind IN ('failed', 'dead_token')) AS receipt_failed,
    max(source = 'receipt') AS has_receipt,
    max(kind = 'dead_token') AS dead_token
FROM push_events
WHERE vendor != '' AND task_id != ''
GROUP BY task_id, device_id, vendor;

-- Arrival rate per vendor, app and hour of submission (docs/design.md §3).
CREATE VIEW IF NOT EXISTS arrival_by_vendor_app_hour AS
SELECT
    toStartOfHour(submitted_at) AS hour,
    vendor,
    app_id,
    count() AS pairs_submitted,
    sum(arrived) AS pairs_arrived,
    sum(delivered) AS pairs_delivered,
    sum(accepted AND NOT has_receipt) AS pairs_unknown,
    sum(receipt_failed) AS pairs_failed_receipt,
    round(pairs_arrived / pairs_submitted, 6) AS arrival_rate,
    round(pairs_delivered / pairs_submitted, 6) AS delivered_rate,
    round(pairs_unknown / pairs_submitted, 6) AS unknown_rate
FROM push_submissions
WHERE submitted = 1
GROUP BY hour, vendor, app_id;

-- One row per (task_id, device_id) across vendors: a device that fell back from one vendor to
-- another is one pair here (arrived if any vendor accepted or delivered it).
CREATE VIEW IF NOT EXISTS push_device_submissions AS
SELECT
    task_id,
    device_id,
    any(app_id) AS app_id,
    min(submitted_at) AS submitted_at,
    max(arrived) AS arrived,
    max(delivered) AS delivered,
    max(accepted AND NOT has_receipt) AS unknown
FROM push_submissions
WHERE submitted = 1
GROUP BY task_id, device_id;

-- Arrival rate per app and hour, counting each (task, device) pair once.
CREATE VIEW IF NOT EXISTS arrival_by_app_hour AS
SELECT
    toStartOfHour(submitted_at) AS hour,
    app_id,
    count() AS pairs_submitted,
    sum(arrived) AS pairs_arrived,
    sum(delivered) AS pairs_delivered,
    sum(unknown) AS pairs_unknown,
    round(pairs_arrived / pairs_submitted, 6) AS arrival_rate,
    round(pairs_delivered / pairs_submitted, 6) AS delivered_rate,
    round(pairs_unknown / pairs_submitted, 6) AS unknown_rate
FROM push_device_submissions
GROUP BY hour, app_id;

-- Every outcome counted: events per day, app, vendor, stage, kind and reason, each event once.
CREATE VIEW IF NOT EXISTS push_outcome_counts AS
SELECT
    toDate(event_time) AS day,
    app_id,
    vendor,
    stage,
    kind,
    reason,
    uniqExact(event_id) AS events
FROM push_events
GROUP BY day, app_id, vendor, stage, kind, reason;

-- Latency percentiles (persisted to vendor answer, persisted to delivery receipt), per vendor
-- and hour, each event once.
CREATE VIEW IF NOT EXISTS push_latency_by_vendor_hour AS
SELECT
    toStartOfHour(one_time) AS hour,
    one_vendor AS vendor,
    one_kind AS kind,
    count() AS events,
    quantiles(0.5, 0.9, 0.99)(one_latency_ms) AS latency_ms_p50_p90_p99
FROM
(
    SELECT
        event_id,
        any(event_time) AS one_time,
        any(vendor) AS one_vendor,
        any(kind) AS one_kind,
        any(latency_ms) AS one_latency_ms
    FROM push_events
    WHERE kind IN ('accepted', 'delivered') AND latency_ms IS NOT NULL
    GROUP BY event_id
)
GROUP BY hour, vendor, kind;
