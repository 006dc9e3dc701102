-- Learned volatility masks (issue 30, regression/volatilitymask.go): the
-- learned-volatile regions a comparison masked, listed on it so nothing is
-- hidden silently (NULL: none). The suite's volatility settings live in its
-- spec (JSON), like its other comparison settings.
ALTER TABLE comparisons ADD COLUMN masked_regions jsonb;

-- A suite's last runs, newest first: what every learning reads.
CREATE INDEX runs_suite_created_idx ON runs (suite_id, created_at DESC, id DESC);
