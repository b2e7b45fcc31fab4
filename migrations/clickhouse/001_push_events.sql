-- The append-only push event log: one row per outcome (push.outcomes) and per matched vendor
-- receipt (push.receipts). Replays and duplicate receipts insert rows with the same event_id and
-- the same sorting key, so ReplacingMergeTree folds them on merge (and SELECT ... FINAL folds
-- them at query time); every figure the views publish is computed with uniqExact or per-pair
-- max/min, so it is exact even before a merge.
-- Runs on ClickHouse 18.16 and current releases: no DateTime64, no TTL, no LowCardinality.
-- Retention: drop old months with ALTER TABLE push_events DROP PARTITION 'YYYYMM'.
CREATE TABLE IF NOT EXISTS push_events
(
    event_id          String,
    event_time        DateTime('UTC'),
    event_ms          UInt64,
    kind              Enum8('submitted' = 1, 'accepted' = 2, 'delivered' = 3, 'failed' = 4, 'dead_token' = 5,
                            'throttled' = 6, 'merged' = 7, 'suppressed' = 8, 'dropped' = 9, 'skipped_duplicate' = 10),
    source            Enum8('outcome' = 1, 'receipt' = 2),
    stage             String,
    task_id           String,
    uid               String,
    device_id         String,
    conv_id           String,
    seq               Int64,
    msg_id            String,
    app_id            String,
    platform          String,
    vendor            String,
    reason            String,
    code              String,
    vendor_message_id String,
    attempts          UInt16,
    persisted_time    DateTime('UTC'),
    latency_ms        Nullable(UInt32),
    inserted_at       DateTime('UTC') DEFAULT now()
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(event_time)
ORDER BY (app_id, vendor, kind, event_id);
