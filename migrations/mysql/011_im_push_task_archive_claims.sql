-- The archive keeps every column of im_push_task (migrations/archive.ts copies them): the claims of
-- 010. Guarded like 007: added only when missing; a re-run adds nothing.
SELECT IF(COUNT(*) = 0, 'ALTER TABLE im_push_task_archive ADD COLUMN claims SMALLINT UNSIGNED NOT NULL DEFAULT 1 COMMENT ''times the fan-out claimed the task''', 'DO 0')
INTO @im_push_task_archive_claims_ddl
FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'im_push_task_archive' AND COLUMN_NAME = 'claims';
PREPARE im_push_task_archive_claims_ddl FROM @im_push_task_archive_claims_ddl;
EXECUTE im_push_task_archive_claims_ddl;
DEALLOCATE PREPARE im_push_task_archive_claims_ddl;
