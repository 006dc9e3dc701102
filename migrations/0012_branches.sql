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
