-- Journeys as checkpoints (issue 15): in a suite target, each `screenshot`
-- action is a checkpoint with baselines of its own. '' is the page's final
-- screenshot, the checkpoint every baseline and comparison written before
-- this migration shows.
ALTER TABLE baselines ADD COLUMN checkpoint text NOT NULL DEFAULT '';
ALTER TABLE baselines DROP CONSTRAINT baselines_branch_version_key;
ALTER TABLE baselines ADD CONSTRAINT baselines_checkpoint_version_key
    UNIQUE (suite_id, branch, target, checkpoint, viewport, segment, version);

-- step: the checkpoint's screenshot action's index in the target's actions
-- (NULL: the final screenshot); failed_step: the index of the action whose
-- failure left the checkpoint an error (NULL: none).
ALTER TABLE comparisons
    ADD COLUMN checkpoint  text NOT NULL DEFAULT '',
    ADD COLUMN step        integer,
    ADD COLUMN failed_step integer;
ALTER TABLE comparisons DROP CONSTRAINT comparisons_run_id_target_viewport_segment_key;
ALTER TABLE comparisons ADD CONSTRAINT comparisons_checkpoint_key
    UNIQUE (run_id, target, checkpoint, viewport, segment);
