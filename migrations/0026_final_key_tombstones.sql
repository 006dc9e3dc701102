-- A crawl page's final URL identity when it differs from the URL it was
-- asked for (a redirect): the crawl frontier holds both, so a start page
-- /x/index.html that lands on /x/ is not captured again as /x/.
ALTER TABLE jobs ADD COLUMN final_key text;
CREATE INDEX jobs_batch_final_key ON jobs (batch_id, final_key) WHERE final_key IS NOT NULL;

-- Objects being deleted (retention, the orphan sweep): marked in the
-- transaction that found no row naming them, under a per-key lock that a
-- commit naming the key also takes; such a commit refuses a marked key.
-- 'deleting' until the object is gone, then 'deleted' (with deleted_at)
-- for the sweep grace, so a commit whose reuse of the object started
-- before the delete is refused too.
CREATE TABLE object_tombstones (
    object_key text PRIMARY KEY,
    state      text NOT NULL DEFAULT 'deleting' CHECK (state IN ('deleting', 'deleted')),
    marked_at  timestamptz NOT NULL DEFAULT now(),
    deleted_at timestamptz
);
