-- Progress of campaign expansions (processors/campaigns/expansion.ts), one row per campaign, written
-- with absolute counts before each of the expansion's commits (a repeat after a crash converges);
-- `pushctl entry` answers GET /v1/campaigns/{id} from it and from ClickHouse.
CREATE TABLE IF NOT EXISTS push_campaign (
  campaign_id  VARCHAR(64)  NOT NULL,
  sender       VARCHAR(64)  NOT NULL,
  app_id       VARCHAR(64)  NOT NULL,
  state        ENUM('expanding', 'done', 'cancelled') NOT NULL,
  total        INT UNSIGNED NOT NULL COMMENT 'distinct uids of the campaign',
  expanded     INT UNSIGNED NOT NULL COMMENT 'per-user requests produced to push.requests',
  cancelled_at DATETIME(3)  NULL,
  updated_at   DATETIME(3)  NOT NULL,
  PRIMARY KEY (campaign_id),
  KEY idx_sender (sender)
) ENGINE=InnoDB;
