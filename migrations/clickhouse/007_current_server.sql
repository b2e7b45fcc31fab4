-- On a current ClickHouse (21.8 LTS and later), what the 18.16 schema of 001 could not have:
-- LowCardinality(String) for the columns with a few distinct values (dictionary-encoded: smaller
-- parts and faster GROUP BY vendor, app, stage, reason), and a retention TTL that drops events
-- 400 days old in the background. kind and source are Enum8 already. The 18.16 server of the local
-- stack leaves this file pending; `pushctl migrate` applies it after an upgrade. Change the
-- retention with ALTER TABLE push_events MODIFY TTL event_time + INTERVAL <n> DAY.
-- requires ClickHouse >= 21.8
ALTER TABLE push_events
    MODIFY COLUMN app_id LowCardinality(String),
    MODIFY COLUMN vendor LowCardinality(String),
    MODIFY COLUMN platform LowCardinality(String),
    MODIFY COLUMN stage LowCardinality(String),
    MODIFY COLUMN reason LowCardinality(String),
    MODIFY COLUMN code LowCardinality(String),
    MODIFY COLUMN sender LowCardinality(String) DEFAULT '',
    MODIFY COLUMN category LowCardinality(String) DEFAULT '';

ALTER TABLE push_events MODIFY TTL event_time + INTERVAL 400 DAY;
