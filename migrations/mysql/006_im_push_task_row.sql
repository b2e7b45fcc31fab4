-- The task row as the system of record (docs/data.md, "im_push_task"): what was sent to the device,
-- written by the fan-out's claim. unread_cnt is the badge sent; payload the title and summary sent
-- (JSON {"title","body"} in UTF-8, at most 1024 bytes, cut between grapheme clusters; the generic
-- text for private-mode users and sensitive conversations, never the message content);
-- collapse_key the collapse id sent (the notify id of HMS, Xiaomi, OPPO and vivo derives from it);
-- merge_kind the dispatch's kind. The index serves a user's tasks by status and time.
--
-- Applies to a table that already has rows, on MariaDB and MySQL 8 alike (no ADD COLUMN IF NOT
-- EXISTS, which MySQL lacks): the columns and the index still missing are looked up in
-- information_schema and added by one ALTER TABLE, so a re-run after a crash adds only what is
-- missing, and nothing when all is there. Columns go last (an instant ADD COLUMN on MySQL 8 and
-- MariaDB 10.3+); rows written before this migration keep the defaults (payload NULL).
SELECT CONCAT_WS(', ',
  IF(SUM(COLUMN_NAME = 'unread_cnt') = 0, 'ADD COLUMN unread_cnt INT UNSIGNED NOT NULL DEFAULT 0 COMMENT ''the unread count (badge) sent''', NULL),
  IF(SUM(COLUMN_NAME = 'payload') = 0, 'ADD COLUMN payload VARBINARY(1024) NULL COMMENT ''title and summary sent: JSON, UTF-8, at most 1024 bytes''', NULL),
  IF(SUM(COLUMN_NAME = 'collapse_key') = 0, 'ADD COLUMN collapse_key VARCHAR(64) NOT NULL DEFAULT '''' COMMENT ''the collapse id sent''', NULL),
  IF(SUM(COLUMN_NAME = 'merge_kind') = 0, 'ADD COLUMN merge_kind VARCHAR(16) NOT NULL DEFAULT '''' COMMENT ''LEADING, TRAILING, IMMEDIATE or DEFERRED''', NULL)
) INTO @im_push_task_changes
FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'im_push_task';
SELECT CONCAT_WS(', ', NULLIF(@im_push_task_changes, ''),
  IF(COUNT(*) = 0, 'ADD KEY idx_uid_status_created (uid, status, created_at)', NULL)
) INTO @im_push_task_changes
FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'im_push_task' AND INDEX_NAME = 'idx_uid_status_created';
SET @im_push_task_ddl = IF(@im_push_task_changes = '', 'DO 0', CONCAT('ALTER TABLE im_push_task ', @im_push_task_changes));
PREPARE im_push_task_ddl FROM @im_push_task_ddl;
EXECUTE im_push_task_ddl;
DEALLOCATE PREPARE im_push_task_ddl;
