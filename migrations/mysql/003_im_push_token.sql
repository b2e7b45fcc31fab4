-- Vendor push tokens: one row per (device_id, vendor) (docs/design.md §2.5, §3), upserted only when a
-- report changes it. status: 1 valid, 0 invalid. A token is invalidated at once on a dead-token
-- code, after 3 consecutive failures, or when not refreshed for 30 days; a new report revives it.
CREATE TABLE IF NOT EXISTS im_push_token (
  id                   BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  uid                  VARCHAR(64)     NOT NULL,
  device_id            VARCHAR(128)    NOT NULL,
  vendor               VARCHAR(16)     NOT NULL COMMENT 'apns | fcm | hms | xiaomi | oppo | vivo',
  platform             VARCHAR(16)     NOT NULL DEFAULT '',
  app_id               VARCHAR(64)     NOT NULL DEFAULT '',
  token                VARCHAR(512)    NOT NULL,
  status               TINYINT         NOT NULL DEFAULT 1 COMMENT '1 valid, 0 invalid (the token state)',
  consecutive_failures SMALLINT UNSIGNED NOT NULL DEFAULT 0,
  invalid_reason       VARCHAR(64)     NULL COMMENT 'dead_token | consecutive_failures | stale | ...',
  reported_at          DATETIME(3)     NOT NULL COMMENT 'the client report',
  refreshed_at         DATETIME(3)     NULL COMMENT 'the last report that confirmed the token',
  invalidated_at       DATETIME(3)     NULL,
  changed_at           DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3) COMMENT 'the last change; an older change never overwrites a newer one',
  PRIMARY KEY (id),
  UNIQUE KEY uk_device_vendor (device_id, vendor),
  KEY idx_uid (uid),
  KEY idx_refreshed (status, refreshed_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
