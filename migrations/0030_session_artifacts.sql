-- Files a session's commands stored (screenshots, PDFs), by name within the session.
CREATE TABLE session_artifacts (
    session_id   uuid        NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    name         text        NOT NULL,
    kind         text        NOT NULL,
    key          text        NOT NULL,
    content_type text        NOT NULL,
    bytes        bigint      NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, name)
);
