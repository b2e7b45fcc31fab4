-- A push whose last attempts never reached the vendor (outcome reason `vendor_unreachable`, e.g.
-- APNs streams refused on GOAWAY) was not submitted: it no longer counts in the denominator of
-- the arrival rate. push_submissions is recreated with that rule; the views built on it read it
-- by name, so they follow.
DROP TABLE IF EXISTS push_submissions;

CREATE VIEW IF NOT EXISTS push_submissions AS
SELECT
    task_id,
    device_id,
    vendor,
    any(app_id) AS app_id,
    max(platform) AS platform,
    minIf(event_time, source = 'outcome' AND kind IN ('submitted', 'accepted', 'failed', 'dead_token', 'throttled') AND reason != 'vendor_unreachable') AS submitted_at,
    max(source = 'outcome' AND kind IN ('submitted', 'accepted', 'failed', 'dead_token', 'throttled') AND reason != 'vendor_unreachable') AS submitted,
    max(kind IN ('accepted', 'delivered')) AS arrived,
    max(kind = 'accepted') AS accepted,
    max(source = 'receipt' AND kind = 'delivered') AS delivered,
    max(source = 'receipt' AND kind IN ('failed', 'dead_token')) AS receipt_failed,
    max(source = 'receipt') AS has_receipt,
    max(kind = 'dead_token') AS dead_token
FROM push_events
WHERE vendor != '' AND task_id != ''
GROUP BY task_id, device_id, vendor;
