-- The interactive lane (issue 28): jobs of POST /v1/capture, the Browserless-compatible
-- endpoints and the MCP tools are held and dispatched apart from batch jobs, with their
-- own depth, onto their own queue, which every worker serves with reserved tabs.
ALTER TABLE jobs ADD COLUMN interactive boolean NOT NULL DEFAULT false;
-- Held interactive jobs in each owner's order (the lane's dispatch scan).
CREATE INDEX jobs_held_interactive_idx ON jobs (owner, created_at, batch_id, seq)
    WHERE status = 'queued' AND dispatched_at IS NULL AND interactive;
