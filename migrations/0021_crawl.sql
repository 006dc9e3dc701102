-- Crawl batches (jobs/crawl.go): the batch keeps its crawl settings; each of its jobs its
-- depth, the page that linked to it and its normalised URL identity, held once per batch
-- so concurrent workers adding the same link add one job.
ALTER TABLE batches ADD COLUMN crawl jsonb;
ALTER TABLE jobs ADD COLUMN depth integer,
    ADD COLUMN parent_id uuid,
    ADD COLUMN found_on text,
    ADD COLUMN url_key text;
CREATE UNIQUE INDEX jobs_batch_url_key ON jobs (batch_id, url_key) WHERE url_key IS NOT NULL;
-- Suite discovery (regression/discover.go): a page no longer discovered has missing
-- comparisons without a capture job.
ALTER TABLE comparisons ALTER COLUMN job_id DROP NOT NULL;
