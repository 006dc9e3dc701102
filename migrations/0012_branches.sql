-- Branches (issue 16): a run may belong to a branch of the code under test
-- and compares against that branch's approved baselines, falling back to
-- its base branch's. Baselines carry their branch: '' is the suite's main
-- branch (every baseline written before this migration), anything else a
-- branch's own, promoted to the base branch by a merge.
ALTER TABLE runs
    ADD COLUMN branch      text NOT NULL DEFAULT '',
    ADD COLUMN base_branch text NOT NULL DEFAULT '',
    ADD COLUMN commit_sha  text NOT NULL DEFAULT '',
    ADD COLUMN base_url    text NOT NULL DEFAULT '';

ALTER TABLE baselines ADD COLUMN branch text NOT NULL DEFAULT '';
ALTER TABLE baselines DROP CONSTRAINT baselines_suite_id_target_viewport_segment_version_key;
ALTER TABLE baselines ADD CONSTRAINT baselines_branch_version_key
    UNIQUE (suite_id, branch, target, viewport, segment, version);

-- CI statuses (issue 16): a suite's code host (provider, api_url, repo,
-- context; no token) and its token, write-only: the API never returns it.
-- No encryption helper exists in the tree yet, so the token is stored as it
-- is given, like webhook secrets.
ALTER TABLE suites
    ADD COLUMN vcs       jsonb,
    ADD COLUMN vcs_token text;
-- A run's pull (merge) request number, and the dashboard's base URL the API
-- answered it under (the worker links the run with it).
ALTER TABLE runs
    ADD COLUMN pull_request  integer NOT NULL DEFAULT 0,
    ADD COLUMN dashboard_url text    NOT NULL DEFAULT '';
-- The one comment per pull request that every run edits.
CREATE TABLE vcs_comments (
    suite_id     uuid    NOT NULL REFERENCES suites (id) ON DELETE CASCADE,
    pull_request integer NOT NULL,
    comment_id   text    NOT NULL,
    PRIMARY KEY (suite_id, pull_request)
);
