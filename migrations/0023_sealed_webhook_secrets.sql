-- Webhook signing secrets are sealed at rest like every other secret (issue 25): with
-- SNAPQ_SECRET_KEY set, new rows keep the secret only in the *_sealed column (AES-256-GCM,
-- bound to the row); rows written before, or without a key, keep it in plaintext and are
-- sealed when the api starts with a key.
ALTER TABLE batch_webhooks ALTER COLUMN secret DROP NOT NULL;
ALTER TABLE batch_webhooks ADD COLUMN secret_sealed bytea;
ALTER TABLE suites ADD COLUMN webhook_secret_sealed bytea;
