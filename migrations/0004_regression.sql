-- Visual regression: suites of pages, runs (each backed by a batch), per-segment
-- comparisons against versioned baselines.

-- Which event a batch webhook announces: a plain batch announces its own
-- completion; a run's batch carries the suite's webhook for run.completed.
ALTER TABLE batch_webhooks ADD COLUMN event text NOT NULL DEFAULT 'batch.completed';

CREATE TABLE suites (
    id              uuid PRIMARY KEY,
    api_key_id      uuid REFERENCES api_keys (id), -- NULL: created while SNAPQ_AUTH=off
    name            text        NOT NULL,
    -- targets, options, threshold, pixel_threshold, ignore: validated on write.
    spec            jsonb       NOT NULL,
    schedule_cron   text,
    schedule_tz     text,
    enabled         boolean     NOT NULL DEFAULT true,
    webhook_url     text,
    webhook_secret  text, -- needed in clear to sign deliveries; never returned by the API
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX suites_owner_idx ON suites (api_key_id, id);
CREATE INDEX suites_scheduled_idx ON suites (id) WHERE enabled AND schedule_cron IS NOT NULL;

CREATE TABLE runs (
    id            uuid PRIMARY KEY,
    suite_id      uuid        NOT NULL REFERENCES suites (id) ON DELETE CASCADE,
    batch_id      uuid        NOT NULL UNIQUE REFERENCES batches (id) ON DELETE CASCADE,
    trigger       text        NOT NULL CHECK (trigger IN ('manual', 'schedule')),
    -- The schedule activation a scheduled run belongs to: two api replicas
    -- firing the same activation make one run.
    scheduled_for timestamptz,
    status        text        NOT NULL DEFAULT 'running'
                  CHECK (status IN ('running', 'passed', 'failed', 'needs_review', 'error', 'approved')),
    -- The suite's comparison settings when the run started.
    spec          jsonb       NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz,
    UNIQUE (suite_id, scheduled_for)
);
CREATE INDEX runs_suite_idx ON runs (suite_id, id);
CREATE INDEX runs_running_idx ON runs (created_at) WHERE status = 'running';

-- One capture job of a run: which target and viewport it shows.
CREATE TABLE run_captures (
    job_id      uuid PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    run_id      uuid        NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    target      text        NOT NULL,
    viewport    text        NOT NULL,
    compared_at timestamptz
);
CREATE INDEX run_captures_run_idx ON run_captures (run_id);

-- Every approval adds a version per (target, viewport, segment); the highest
-- version is the active baseline. artifact_id NULL: the segment was removed.
CREATE TABLE baselines (
    id            uuid PRIMARY KEY,
    suite_id      uuid        NOT NULL REFERENCES suites (id) ON DELETE CASCADE,
    target        text        NOT NULL,
    viewport      text        NOT NULL,
    segment       integer     NOT NULL,
    version       integer     NOT NULL,
    artifact_id   uuid REFERENCES artifacts (id),
    run_id        uuid REFERENCES runs (id) ON DELETE SET NULL,
    restored_from uuid REFERENCES baselines (id) ON DELETE SET NULL,
    approved_by   text        NOT NULL,
    approved_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (suite_id, target, viewport, segment, version)
);

CREATE TABLE comparisons (
    id                   uuid PRIMARY KEY,
    run_id               uuid        NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    job_id               uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    target               text        NOT NULL,
    viewport             text        NOT NULL,
    segment              integer     NOT NULL,
    status               text        NOT NULL CHECK (status IN ('passed', 'failed', 'new', 'missing', 'error')),
    diff_pixels          bigint      NOT NULL DEFAULT 0,
    diff_ratio           double precision NOT NULL DEFAULT 0,
    threshold            double precision NOT NULL DEFAULT 0,
    message              text        NOT NULL DEFAULT '',
    baseline_id          uuid REFERENCES baselines (id) ON DELETE SET NULL,
    baseline_artifact_id uuid REFERENCES artifacts (id),
    current_artifact_id  uuid REFERENCES artifacts (id),
    diff_artifact_id     uuid REFERENCES artifacts (id),
    approved_at          timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now(),
    UNIQUE (run_id, target, viewport, segment)
);
CREATE INDEX comparisons_job_idx ON comparisons (job_id);
