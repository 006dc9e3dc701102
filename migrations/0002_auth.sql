-- API keys (only a SHA-256 of each key is kept), batch ownership and
-- idempotency keys for POST /v1/batches.
CREATE TABLE api_keys (
    id           uuid PRIMARY KEY,
    name         text        NOT NULL,
    prefix       text        NOT NULL, -- the first characters of the key, to recognise it in lists
    sha256       text        NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);

-- NULL: created while SNAPQ_AUTH=off.
ALTER TABLE batches ADD COLUMN api_key_id uuid REFERENCES api_keys (id);
CREATE INDEX batches_owner_idx ON batches (api_key_id, id);

CREATE TABLE idempotency_keys (
    owner        text        NOT NULL, -- api key id, or '' without auth
    key          text        NOT NULL,
    request_hash text        NOT NULL,
    batch_id     uuid        NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner, key)
);
