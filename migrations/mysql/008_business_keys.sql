-- API keys of the HTTP entry (`pushctl entry`, docs/entry.md): one or more per business (sender).
-- Only a SHA-256 of the key's secret part is stored; the key itself is printed once by
-- `pushctl entry keys add <business>` and never again. A request names its key by `key_id` (the
-- part before the dot of `pk_<key_id>.<secret>`) and is accepted when the hash of its secret
-- matches and the key is not revoked.
CREATE TABLE IF NOT EXISTS push_business_key (
  key_id              VARCHAR(32)  NOT NULL COMMENT 'public part of the key, random',
  business            VARCHAR(64)  NOT NULL COMMENT 'the sender id every request of this key carries',
  secret_sha256       BINARY(32)   NOT NULL COMMENT 'sha256 of the secret part; the key is never stored',
  requests_per_second INT UNSIGNED NULL COMMENT 'rate limit of this key; NULL: PUSH_ENTRY_KEY_REQUESTS_PER_SECOND',
  created_at          DATETIME(3)  NOT NULL,
  revoked_at          DATETIME(3)  NULL,
  PRIMARY KEY (key_id),
  KEY idx_business (business)
) ENGINE=InnoDB;
