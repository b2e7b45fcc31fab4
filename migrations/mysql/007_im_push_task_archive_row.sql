-- The archive carries every column of im_push_task (migrations/archive.ts copies them): the trail
-- of 004 and the task row of 006 (docs/data.md). Guarded like 006: only missing columns are added,
-- by one ALTER TABLE, on MariaDB and MySQL 8; a re-run adds nothing.
SELECT CONCAT_WS(', ',
  IF(SUM(COLUMN_NAME = 'channel_trail') = 0, 'ADD COLUMN channel_trail TEXT NULL COMMENT ''JSON answers of earlier channels''', NULL),
  IF(SUM(COLUMN_NAME = 'unread_cnt') = 0, 'ADD COLUMN unread_cnt INT UNSIGNED NOT NULL DEFAULT 0 COMMENT ''the unread count (badge) sent''', NULL),
  IF(SUM(COLUMN_NAME = 'payload') = 0, 'ADD COLUMN payload VARBINARY(1024) NULL COMMENT ''title and summary sent: JSON, UTF-8, at most 1024 bytes''', NULL),
  IF(SUM(COLUMN_NAME = 'collapse_key') = 0, 'ADD COLUMN collapse_key VARCHAR(64) NOT NULL DEFAULT '''' COMMENT ''the collapse id sent''', NULL),
  IF(SUM(COLUMN_NAME = 'merge_kind') = 0, 'ADD COLUMN merge_kind VARCHAR(16) NOT NULL DEFAULT '''' COMMENT ''LEADING, TRAILING, IMMEDIATE or DEFERRED''', NULL)
) INTO @im_push_task_archive_changes
FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'im_push_task_archive';
SET @im_push_task_archive_ddl = IF(@im_push_task_archive_changes = '', 'DO 0', CONCAT('ALTER TABLE im_push_task_archive ', @im_push_task_archive_changes));
PREPARE im_push_task_archive_ddl FROM @im_push_task_archive_ddl;
EXECUTE im_push_task_archive_ddl;
DEALLOCATE PREPARE im_push_task_archive_ddl;
