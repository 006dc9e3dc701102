-- Interactive browser sessions (issue 29): one tab held on one worker for the session's
-- life. The api admits them (the key's session cap and in-flight budget count the live
-- ones), the worker holding the tab records its end; the reaper ends those of dead workers.
CREATE TABLE sessions (
    id             uuid        PRIMARY KEY,
    owner          text        NOT NULL,
    status         text        NOT NULL CHECK (status IN ('opening', 'open', 'closed', 'lost', 'failed')),
    worker_id      text        NOT NULL DEFAULT '',
    options        jsonb       NOT NULL,
    commands       integer     NOT NULL DEFAULT 0,
    created_at     timestamptz NOT NULL DEFAULT now(),
    last_active_at timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL,
    closed_at      timestamptz,
    close_reason   text        NOT NULL DEFAULT ''
);
-- A key's sessions, newest first; the live ones (caps, the reaper).
CREATE INDEX sessions_owner_idx ON sessions (owner, created_at DESC);
CREATE INDEX sessions_live_idx ON sessions (owner) WHERE status IN ('opening', 'open');
