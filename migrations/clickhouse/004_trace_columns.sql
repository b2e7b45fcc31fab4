-- Columns `pushctl trace` (cli/commands/trace.ts) reads to say why a push went out or not. Each is
-- already on the push-outcome record (processors/model/records.ts); NULL on receipts and on rows
-- written before this migration. The views of 002 and 003 do not read them, so every published
-- figure is unchanged.
--   persisted_ms  when IM persisted the message, epoch ms (persisted_time has seconds only): the
--                 online judgement's "acknowledged N ms after the message" comes from it
--   collapse_id   the collapse id of a pushed or merged notification (one per uid and conversation)
--   token_hash    fan-out outcomes about a vendor call: sha256 of the token used, hex (32 chars);
--                 the token itself is never stored here
ALTER TABLE push_events
    ADD COLUMN persisted_ms Nullable(UInt64),
    ADD COLUMN collapse_id Nullable(String),
    ADD COLUMN token_hash Nullable(String);
