-- Secrets at rest and notifications (issue 16).
--
-- A suite's vcs token is sealed with the authprofile sealer (AES-256-GCM,
-- SNAPQ_SECRET_KEY): vcs_token_sealed holds the ciphertext and vcs_token,
-- the plaintext column of 0012, is emptied as each row is sealed (the api
-- seals every plaintext row at start when a key is set; a write always
-- seals).
ALTER TABLE suites
    ADD COLUMN vcs_token_sealed bytea,
    -- Notification channels without their secrets (kind, filters, email
    -- recipients), and their secrets (URLs, webhook signing secrets) sealed.
    ADD COLUMN notify           jsonb,
    ADD COLUMN notify_sealed    bytea;

-- When a finished run's notifications were decided: the worker that settles
-- a run decides at once, the api's reconciler catches up. Runs finished
-- before this migration are taken as decided (no channel existed).
ALTER TABLE runs ADD COLUMN notify_planned_at timestamptz;
UPDATE runs SET notify_planned_at = coalesce(finished_at, created_at) WHERE status <> 'running';
CREATE INDEX runs_notify_unplanned ON runs (finished_at)
    WHERE notify_planned_at IS NULL AND finished_at IS NOT NULL;

-- One message of a run to one channel, with the outcome of its attempts.
CREATE TABLE notifications (
    id           uuid PRIMARY KEY,
    run_id       uuid        NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    channel_id   text        NOT NULL,
    kind         text        NOT NULL,
    reason       text        NOT NULL,
    status       text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts     integer     NOT NULL DEFAULT 0,
    last_error   text        NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    delivered_at timestamptz,
    UNIQUE (run_id, channel_id)
);
CREATE INDEX notifications_pending ON notifications (updated_at) WHERE status = 'pending';
