-- The facts behind each decision, for `pushctl trace` (pipeline/trace.ts) to say why in words:
-- the push-outcome record's `detail` (schemas/push-outcome.avsc), `k=v` pairs joined by `;`
-- (processors/model/outcomes.ts, docs/data.md "Decision details"): heartbeat age, hold window and
-- ACK delay of the online judgement, the merge that carried a message, quiet hours with the
-- user's zone and local time, a mention override, private mode, the channel chosen and why.
-- NULL on receipts and on rows written before this migration; the views do not read it.
ALTER TABLE push_events
    ADD COLUMN detail Nullable(String);
