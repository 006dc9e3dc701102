package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/jobs"
)

// JobCounts returns how many jobs are in each status, for the api's
// snapq_jobs gauge. Statuses without jobs are absent from the map.
func (s *Store) JobCounts(ctx context.Context) (map[string]int64, error) {
	n, err := s.countByStatus(ctx, `SELECT status, count(*) FROM jobs GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("count jobs by status: %w", err)
	}
	return n, nil
}

// RunCounts returns how many regression runs are in each status, for the
// api's snapq_runs gauge. Statuses without runs are absent from the map.
func (s *Store) RunCounts(ctx context.Context) (map[string]int64, error) {
	n, err := s.countByStatus(ctx, `SELECT status, count(*) FROM runs GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("count runs by status: %w", err)
	}
	return n, nil
}

// countByStatus runs a query returning (status, count) rows.
func (s *Store) countByStatus(ctx context.Context, query string) (map[string]int64, error) {
	rows, err := s.pool.Query(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var status string
		var n int64
		if err := rows.Scan(&status, &n); err != nil {
			return nil, err
		}
		out[status] = n
	}
	return out, rows.Err()
}

// StorageStats implements web.StorageCounter: one pass over the artifact and
// thumbnail rows (its cost grows with them; the scrape has a timeout).
func (s *Store) StorageStats(ctx context.Context) (*jobs.StorageStats, error) {
	const refs = `WITH refs AS (SELECT object_key, bytes, kind FROM artifacts
		UNION ALL SELECT object_key, bytes, 'thumbnail' FROM thumbnails)`
	out := &jobs.StorageStats{BytesByKind: map[string]int64{}}
	rows, err := s.pool.Query(ctx, refs+` SELECT kind, sum(bytes)::bigint FROM refs GROUP BY kind`)
	if err != nil {
		return nil, fmt.Errorf("storage stats: %w", err)
	}
	var kind string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&kind, &n}, func() error {
		out.BytesByKind[kind] = n
		return nil
	}); err != nil {
		return nil, fmt.Errorf("storage stats: %w", err)
	}
	err = s.pool.QueryRow(ctx, refs+` SELECT count(*), coalesce(sum(bytes), 0)::bigint
		FROM (SELECT DISTINCT ON (object_key) bytes FROM refs) d`).Scan(&out.Objects, &out.Bytes)
	if err != nil {
		return nil, fmt.Errorf("storage stats: %w", err)
	}
	return out, nil
}
