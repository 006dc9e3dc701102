-- Webhooks: where a batch's completion is announced, and each delivery's outcome.
CREATE TABLE batch_webhooks (
    batch_id   uuid PRIMARY KEY REFERENCES batches (id) ON DELETE CASCADE,
    url        text        NOT NULL,
    -- Needed in clear to sign deliveries (HMAC); never returned by the API.
    secret     text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE webhook_deliveries (
    id           uuid PRIMARY KEY,
    batch_id     uuid        NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    event        text        NOT NULL,
    status       text        NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts     integer     NOT NULL DEFAULT 0,
    last_status  integer,
    last_error   text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz,
    -- A batch completes once: two jobs finishing at the same moment still make one delivery.
    UNIQUE (batch_id, event)
);

-- The reconciler scans pending deliveries only.
CREATE INDEX webhook_deliveries_pending_idx ON webhook_deliveries (updated_at) WHERE status = 'pending';
