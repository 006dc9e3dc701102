-- Review at scale (issue 16): change groups, approval memory, triage bands
-- and rejection.
--   group_key: identifies the change a comparison shows (the boxes of its
--     changed pixel clusters and those pixels' values, regression/group.go);
--     '' when nothing changed. Comparisons of a run with one key are a group.
--   matches_previous: {"baseline_id", "version"} of the superseded baseline
--     version the current image is identical to (it then passed); NULL: none.
--   auto_approved: passed because its ratio was below auto_approve_below.
--   rejected_at/rejected_by: a reviewer rejected the change; the comparison
--     stays failed.
ALTER TABLE comparisons
    ADD COLUMN group_key        text    NOT NULL DEFAULT '',
    ADD COLUMN matches_previous jsonb,
    ADD COLUMN auto_approved    boolean NOT NULL DEFAULT false,
    ADD COLUMN rejected_at      timestamptz,
    ADD COLUMN rejected_by      text    NOT NULL DEFAULT '';
CREATE INDEX comparisons_group_idx ON comparisons (run_id, group_key) WHERE group_key <> '';
