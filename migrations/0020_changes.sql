-- Changes explained by elements (regression/changes.go): each comparison's
-- changes, and the suite rules that suppress them (regression/rules.go).

-- NULL: nothing differed, no box tree was recorded, or compared before this existed.
ALTER TABLE comparisons ADD COLUMN changes jsonb;

CREATE TABLE suite_rules (
    id         uuid PRIMARY KEY,
    suite_id   uuid        NOT NULL REFERENCES suites (id) ON DELETE CASCADE,
    kind       text        NOT NULL CHECK (kind IN ('ignore_element', 'dynamic_text')),
    selector   text        NOT NULL,
    target     text        NOT NULL DEFAULT '', -- '': the whole suite
    pattern    text        NOT NULL DEFAULT '', -- dynamic_text's RE2 pattern
    expires_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX suite_rules_suite_idx ON suite_rules (suite_id, created_at);
