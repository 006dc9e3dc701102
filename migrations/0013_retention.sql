-- Retention (issue 19): a key's own retention in days (NULL: the default,
-- SNAPQ_RETENTION_DAYS; 0: keep forever), the index the age query walks,
-- and the maintenance passes claimed per interval (one replica per pass).
ALTER TABLE api_keys ADD COLUMN retention_days integer
    CHECK (retention_days IS NULL OR retention_days BETWEEN 0 AND 36500);

CREATE INDEX batches_created_idx ON batches (created_at);

CREATE TABLE sweep_passes (
    slot       timestamptz PRIMARY KEY,
    claimed_at timestamptz NOT NULL DEFAULT now()
);

-- What protects a batch from retention: a baseline, or another batch's
-- comparison, naming one of its artifacts.
CREATE INDEX baselines_artifact_idx ON baselines (artifact_id);
CREATE INDEX comparisons_baseline_artifact_idx ON comparisons (baseline_artifact_id);
CREATE INDEX comparisons_current_artifact_idx ON comparisons (current_artifact_id);
CREATE INDEX comparisons_diff_artifact_idx ON comparisons (diff_artifact_id);
