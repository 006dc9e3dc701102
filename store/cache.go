package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/jobs"
)

var _ jobs.ResultCache = (*Store)(nil)

// CachedCapture implements jobs.ResultCache. The source is matched on the
// options hash stored with job when it was written (the same function over
// the same resolved options as the source's), so a job written without one
// (before migration 0014, a suite run's) finds none. Jobs that were
// themselves cache hits are not sources.
func (s *Store) CachedCapture(ctx context.Context, job *jobs.Job, maxAge time.Duration) (*jobs.CachedCapture, error) {
	var c jobs.CachedCapture
	var res []byte
	err := s.pool.QueryRow(ctx, `SELECT j.id, j.result FROM jobs me JOIN jobs j
		ON j.owner = me.owner AND j.url = me.url AND j.options_hash = me.options_hash
		WHERE me.id = $1 AND j.status = 'succeeded' AND j.id <> me.id AND j.result IS NOT NULL
		  AND j.finished_at >= now() - make_interval(secs => $2)
		  AND NOT (j.result ? 'cached_from')
		ORDER BY j.finished_at DESC LIMIT 1`, job.ID, maxAge.Seconds()).Scan(&c.JobID, &res)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("result cache of job %s: %w", job.ID, unavailable(err))
	}
	if err := json.Unmarshal(res, &c.Result); err != nil {
		return nil, fmt.Errorf("result cache: result of job %s: %w", c.JobID, err)
	}
	rows, err := s.pool.Query(ctx, `SELECT a.*, t.object_key, t.content_type, t.bytes, t.width, t.height
		FROM (SELECT `+artifactColumns+` FROM artifacts WHERE job_id = $1) a
		LEFT JOIN thumbnails t ON t.artifact_id = a.id ORDER BY a.seq, a.name`, c.JobID)
	if err != nil {
		return nil, fmt.Errorf("result cache: artifacts of job %s: %w", c.JobID, unavailable(err))
	}
	c.Artifacts, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*jobs.Artifact, error) { return scanArtifactThumbnail(r) })
	if err != nil {
		return nil, fmt.Errorf("result cache: artifacts of job %s: %w", c.JobID, unavailable(err))
	}
	// The segments' row hashes go with them: the copy is compared like the source.
	ids := make([]string, len(c.Artifacts))
	for i, a := range c.Artifacts {
		ids[i] = a.ID
	}
	hashes, err := s.RowHashes(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("result cache: %w", err)
	}
	for _, a := range c.Artifacts {
		a.RowHashes = hashes[a.ID]
	}
	return &c, nil
}
