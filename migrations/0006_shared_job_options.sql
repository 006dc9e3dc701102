-- A batch's jobs share the batch's resolved options: they are stored once, in
-- batches.job_options, and each job keeps only how its own options differ
-- (a JSON merge patch, NULL when they do not). Before, every job row held the
-- whole resolved options: a 1,000-target batch with 200 KB of batch options
-- stored 200 MB.
--
-- Rows stored before keep working unchanged: a batch with job_options NULL has
-- each job's full options in jobs.options.
ALTER TABLE batches ADD COLUMN job_options jsonb;
ALTER TABLE jobs ALTER COLUMN options DROP NOT NULL;
