-- Batches, jobs and artifacts: the system of record. Redis only carries tasks.
CREATE TABLE batches (
    id          uuid PRIMARY KEY,
    labels      jsonb       NOT NULL DEFAULT '{}'::jsonb,
    options     jsonb       NOT NULL DEFAULT '{}'::jsonb,
    total       integer     NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);

CREATE TABLE jobs (
    id            uuid PRIMARY KEY,
    batch_id      uuid        NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    seq           integer     NOT NULL,
    url           text        NOT NULL,
    name          text        NOT NULL,
    options       jsonb       NOT NULL,
    status        text        NOT NULL DEFAULT 'queued'
                  CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'canceled')),
    attempts      integer     NOT NULL DEFAULT 0,
    error_code    text,
    error_message text,
    result        jsonb,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    finished_at   timestamptz,
    UNIQUE (batch_id, seq)
);

CREATE INDEX jobs_batch_status_idx ON jobs (batch_id, status);
CREATE INDEX jobs_batch_id_idx ON jobs (batch_id, id);
-- The reconciler scans unfinished jobs only.
CREATE INDEX jobs_unfinished_idx ON jobs (updated_at) WHERE status IN ('queued', 'running');

CREATE TABLE artifacts (
    id           uuid PRIMARY KEY,
    job_id       uuid        NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    kind         text        NOT NULL,
    name         text        NOT NULL,
    seq          integer     NOT NULL,
    object_key   text        NOT NULL,
    content_type text        NOT NULL,
    bytes        bigint      NOT NULL,
    width        integer,
    height       integer,
    sha256       text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (job_id, name)
);

CREATE INDEX artifacts_job_idx ON artifacts (job_id, seq);
