-- Tasks older than 7 days move here (docs/design.md §3: only 7 days stay hot), in batches, by
-- archiveTasks() in migrations/archive.ts. Same columns as im_push_task; the primary key keeps the
-- original id so a batch moved twice is inserted once.
CREATE TABLE IF NOT EXISTS im_push_task_archive (
  id                BIGINT UNSIGNED NOT NULL,
  task_id           CHAR(36)        NOT NULL,
  uid               VARCHAR(64)     NOT NULL,
  conv_id           VARCHAR(64)     NOT NULL,
  seq               BIGINT          NOT NULL,
  device_id         VARCHAR(128)    NOT NULL,
  msg_id            VARCHAR(64)     NOT NULL DEFAULT '',
  app_id            VARCHAR(64)     NOT NULL DEFAULT '',
  platform          VARCHAR(16)     NOT NULL DEFAULT '',
  vendor            VARCHAR(16)     NOT NULL DEFAULT '',
  vendor_message_id VARCHAR(128)    NULL,
  collapse_id       VARCHAR(64)     NOT NULL DEFAULT '',
  status            TINYINT         NOT NULL DEFAULT 0,
  attempts          SMALLINT UNSIGNED NOT NULL DEFAULT 0,
  fail_code         VARCHAR(64)     NULL,
  created_at        DATETIME(3)     NOT NULL,
  updated_at        DATETIME(3)     NOT NULL,
  submitted_at      DATETIME(3)     NULL,
  archived_at       DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (id),
  KEY idx_task (uid, conv_id, seq, device_id),
  KEY idx_created (created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
