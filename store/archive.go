package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/jobs"
)

// BatchArtifacts returns every artifact of a batch's jobs with its job, in
// job order, then artifact order (the order of a batch's archive).
func (s *Store) BatchArtifacts(ctx context.Context, batchID string) ([]*jobs.JobArtifact, error) {
	rows, err := s.pool.Query(ctx, `SELECT a.id, a.job_id, a.kind, a.name, a.seq, a.object_key, a.content_type,
		a.bytes, coalesce(a.width, 0), coalesce(a.height, 0), a.sha256, coalesce(a.crc32, 0), a.created_at,
		j.seq, j.name, j.url
		FROM jobs j JOIN artifacts a ON a.job_id = j.id
		WHERE j.batch_id = $1 ORDER BY j.seq, a.seq, a.name`, batchID)
	if err != nil {
		return nil, fmt.Errorf("batch artifacts: %w", unavailable(err))
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*jobs.JobArtifact, error) {
		var ja jobs.JobArtifact
		a := &ja.Artifact
		var crc int64
		err := r.Scan(&a.ID, &a.JobID, &a.Kind, &a.Name, &a.Seq, &a.ObjectKey, &a.ContentType, &a.Bytes,
			&a.Width, &a.Height, &a.SHA256, &crc, &a.CreatedAt, &ja.JobSeq, &ja.JobName, &ja.JobURL)
		a.CRC32 = uint32(crc)
		return &ja, err
	})
	if err != nil {
		return nil, fmt.Errorf("batch artifacts: %w", unavailable(err))
	}
	return list, nil
}
