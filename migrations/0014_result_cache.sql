-- The result cache (jobs/cache.go): a job with options.max_age_s reuses a
-- recent succeeded capture of the same URL with the same options by the same
-- API key. options_hash is jobs.OptionsHash of the job's resolved options,
-- set when a batch's jobs are written; NULL for rows stored before (and for
-- jobs written elsewhere): they are never reused.
ALTER TABLE jobs ADD COLUMN options_hash text;

-- The lookup: the newest succeeded job of (owner, url, options_hash).
CREATE INDEX jobs_result_cache_idx ON jobs (owner, url, options_hash, finished_at DESC)
    WHERE status = 'succeeded' AND options_hash IS NOT NULL;
