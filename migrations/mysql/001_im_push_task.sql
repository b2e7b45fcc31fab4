-- Push tasks: one row per (uid, conv_id, seq, device_id), the idempotency key of a push to one
-- device (docs/design.md §1, §3). The seed's im_push_task, extended with device_id.
-- status: 0 pending, 1 submitted, 2 delivered, 3 failed, 4 merged.
CREATE TABLE IF NOT EXISTS im_push_task (
  id                BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  task_id           CHAR(36)        NOT NULL COMMENT 'deterministic id of (uid, conv_id, seq, device_id)',
  uid               VARCHAR(64)     NOT NULL,
  conv_id           VARCHAR(64)     NOT NULL,
  seq               BIGINT          NOT NULL,
  device_id         VARCHAR(128)    NOT NULL,
  msg_id            VARCHAR(64)     NOT NULL DEFAULT '',
  app_id            VARCHAR(64)     NOT NULL DEFAULT '',
  platform          VARCHAR(16)     NOT NULL DEFAULT '',
  vendor            VARCHAR(16)     NOT NULL DEFAULT '' COMMENT 'apns | fcm | hms | xiaomi | oppo | vivo',
  vendor_message_id VARCHAR(128)    NULL,
  collapse_id       VARCHAR(64)     NOT NULL DEFAULT '',
  status            TINYINT         NOT NULL DEFAULT 0 COMMENT '0 pending 1 submitted 2 delivered 3 failed 4 merged',
  attempts          SMALLINT UNSIGNED NOT NULL DEFAULT 0,
  fail_code         VARCHAR(64)     NULL COMMENT 'the vendor code of a failure',
  created_at        DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at        DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  submitted_at      DATETIME(3)     NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uk_task (uid, conv_id, seq, device_id),
  UNIQUE KEY uk_task_id (task_id),
  KEY idx_vendor_message (vendor, vendor_message_id),
  KEY idx_created (created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
