-- How many times the fan-out claimed each task (docs/design.md §2.4, "Takeover"): 1 when its first
-- dispatch claims it, one more each time a dispatch claims it again while it is still pending (the
-- task's partition taken over after a crash or a restart, `pushctl replay`). A claim that reads more
-- than 1 knows that an earlier owner may have called the vendor without an answer recorded on the
-- row, so the call it makes now is a re-send (push_fanout_takeover_resends_total).
--
-- Guarded like 006: added only when missing, on MariaDB and MySQL 8; a re-run adds nothing.
SELECT IF(COUNT(*) = 0, 'ALTER TABLE im_push_task ADD COLUMN claims SMALLINT UNSIGNED NOT NULL DEFAULT 1 COMMENT ''times the fan-out claimed the task''', 'DO 0')
INTO @im_push_task_claims_ddl
FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'im_push_task' AND COLUMN_NAME = 'claims';
PREPARE im_push_task_claims_ddl FROM @im_push_task_claims_ddl;
EXECUTE im_push_task_claims_ddl;
DEALLOCATE PREPARE im_push_task_claims_ddl;
