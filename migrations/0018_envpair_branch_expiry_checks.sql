-- Environment pairs, branch baseline expiry and GitHub check runs (issue 16).
--
-- A run with compare_to_base_url captures every target on two origins and
-- diffs them with each other: the run's own captures (run_captures.job_id)
-- against the reference captures of the same target and viewport
-- (reference_job_id), taken in the same batch. No baseline is read or
-- written.
ALTER TABLE runs
    ADD COLUMN compare_to_base_url text NOT NULL DEFAULT '',
    -- The GitHub check run a suite in vcs.github_mode "check" reports the
    -- run in ('' before it is created).
    ADD COLUMN vcs_check_run       text NOT NULL DEFAULT '';
ALTER TABLE run_captures ADD COLUMN reference_job_id uuid REFERENCES jobs (id) ON DELETE CASCADE;
CREATE UNIQUE INDEX run_captures_reference_idx ON run_captures (reference_job_id) WHERE reference_job_id IS NOT NULL;

-- Branch baselines expire with their branch's last run or approval; the
-- maintenance pass walks them by branch.
CREATE INDEX baselines_branch_idx ON baselines (suite_id, branch) WHERE branch <> '';
CREATE INDEX runs_suite_branch_idx ON runs (suite_id, branch, created_at) WHERE branch <> '';
