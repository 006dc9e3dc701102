package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/jobs"
)

// JobStatuses implements maintenance.SweepStore. ids must be UUIDs.
func (s *Store) JobStatuses(ctx context.Context, ids []string) (map[string]jobs.JobStatus, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, status FROM jobs WHERE id = ANY($1::uuid[])`, ids)
	if err != nil {
		return nil, fmt.Errorf("job statuses: %w", err)
	}
	out := make(map[string]jobs.JobStatus, len(ids))
	var id, status string
	_, err = pgx.ForEachRow(rows, []any{&id, &status}, func() error {
		out[id] = jobs.JobStatus(status)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("job statuses: %w", err)
	}
	return out, nil
}

// ReferencedKeys implements maintenance.SweepStore: keys an artifact or a
// thumbnail names.
func (s *Store) ReferencedKeys(ctx context.Context, keys []string) (map[string]bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT object_key FROM artifacts WHERE object_key = ANY($1::text[])
		UNION SELECT object_key FROM thumbnails WHERE object_key = ANY($1::text[])`, keys)
	if err != nil {
		return nil, fmt.Errorf("referenced keys: %w", err)
	}
	out := make(map[string]bool, len(keys))
	var key string
	_, err = pgx.ForEachRow(rows, []any{&key}, func() error {
		out[key] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("referenced keys: %w", err)
	}
	return out, nil
}
