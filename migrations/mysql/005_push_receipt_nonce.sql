-- HMS receipt callback nonces, shared by every receipt receiver (receipts/nonces.ts): a signed
-- header replayed with another body on another replica or after a restart is refused. One row per
-- (app, nonce), keyed by sha256 of both; the first receiver to INSERT a nonce wins. Rows expire
-- after twice the allowed signature skew and are swept by the receivers.
CREATE TABLE IF NOT EXISTS push_receipt_nonce (
  nonce_hash    BINARY(32)      NOT NULL COMMENT 'sha256 of app id and nonce',
  body_hash     BINARY(32)      NOT NULL COMMENT 'sha256 of the callback body first seen with the nonce',
  expires_at_ms BIGINT UNSIGNED NOT NULL COMMENT 'epoch ms after which the nonce is forgotten',
  PRIMARY KEY (nonce_hash),
  KEY idx_expires (expires_at_ms)
) ENGINE=InnoDB;
