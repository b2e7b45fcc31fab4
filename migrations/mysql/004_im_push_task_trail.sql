-- The answers of a task's earlier channels (dead token, failure, throttle) before its final one,
-- as JSON, written with the final status. A task re-dispatched after a crash is answered from the
-- row; without the trail only its final answer would be re-emitted, and a dead-token refusal that
-- the crash kept from reaching push.outcomes (and the token's invalidation) would be lost.
ALTER TABLE im_push_task ADD COLUMN channel_trail TEXT NULL COMMENT 'JSON answers of earlier channels' AFTER fail_code;
