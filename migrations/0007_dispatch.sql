-- Fair scheduling (jobs/dispatch.go): Postgres is the backlog. A new job is
-- stored queued and held (dispatched_at NULL); the dispatcher moves the
-- first held jobs of every owner to the task queue in turns, keeping a
-- bounded number of dispatched, unfinished jobs.

-- Rows that exist now were enqueued the old way: they count as dispatched
-- (the constant default fills them without a table rewrite; dropping it
-- makes new rows NULL, held).
ALTER TABLE jobs ADD COLUMN dispatched_at timestamptz DEFAULT now();
ALTER TABLE jobs ALTER COLUMN dispatched_at DROP DEFAULT;

-- The batch's owner (api key id, '' without auth), copied onto each job so
-- the dispatcher's per-owner scans need no join. Finished jobs keep ''.
ALTER TABLE jobs ADD COLUMN owner text NOT NULL DEFAULT '';
UPDATE jobs j SET owner = b.api_key_id::text FROM batches b
    WHERE b.id = j.batch_id AND b.api_key_id IS NOT NULL AND j.status IN ('queued', 'running');

-- Every path that writes jobs (batches, suite runs) gets the owner filled in.
CREATE FUNCTION snapq_job_owner() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT coalesce(b.api_key_id::text, '') INTO NEW.owner FROM batches b WHERE b.id = NEW.batch_id;
    NEW.owner := coalesce(NEW.owner, '');
    RETURN NEW;
END
$$;
CREATE TRIGGER jobs_owner BEFORE INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION snapq_job_owner();

-- Held jobs in each owner's order (the dispatcher's scan and its loose
-- index scan of owners).
CREATE INDEX jobs_held_idx ON jobs (owner, created_at, batch_id, seq)
    WHERE status = 'queued' AND dispatched_at IS NULL;
-- Dispatched, unfinished jobs per owner (the depth and each owner's share).
CREATE INDEX jobs_dispatched_idx ON jobs (owner)
    WHERE status IN ('queued', 'running') AND dispatched_at IS NOT NULL;
-- The reconciler scans dispatched, unfinished jobs only.
CREATE INDEX jobs_unfinished_dispatched_idx ON jobs (updated_at)
    WHERE status IN ('queued', 'running') AND dispatched_at IS NOT NULL;
