-- Business pushes (docs/entry.md "Accounting"): who sent a push and why, from the
-- push-outcome record's `business` tag (schemas/push-outcome.avsc): the sender's business id, the
-- category (NOTICE, REMINDER, CAMPAIGN) and the campaign id. Empty on IM pushes, on receipts (a
-- receipt's pair takes them from its outcome rows: the arrival query reads max() over the pair)
-- and on rows written before this migration. The views of 002 and 003 do not read them, so every
-- published figure is unchanged; `pushctl arrival --by campaign|sender` groups the same pairs by them.
ALTER TABLE push_events
    ADD COLUMN sender String DEFAULT '',
    ADD COLUMN category String DEFAULT '',
    ADD COLUMN campaign_id String DEFAULT '';
