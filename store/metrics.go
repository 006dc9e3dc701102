package store

import (
	"context"
	"fmt"
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
