-- Crawl batches (jobs/crawl.go): the links a crawl did not add because the batch was full
-- (max_pages) or its owner at the in-flight cap, each URL once per batch (up to
-- jobs.MaxCrawlSkipped recorded), shown as the batch's crawl.skipped.
ALTER TABLE batches ADD COLUMN crawl_skipped integer NOT NULL DEFAULT 0;
CREATE TABLE crawl_skipped (
    batch_id uuid NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    url_key  text NOT NULL,
    PRIMARY KEY (batch_id, url_key)
);
