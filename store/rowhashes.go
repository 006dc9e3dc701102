package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/regression"
)

var _ regression.RowHashReader = (*Store)(nil)

// RowHashes returns the row hashes blobs recorded for the artifacts ids, by
// artifact id; an artifact without them is left out
// (regression.RowHashReader).
func (s *Store) RowHashes(ctx context.Context, ids []string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT artifact_id::text, hashes FROM segment_row_hashes WHERE artifact_id = ANY($1::uuid[])`, ids)
	if err != nil {
		return nil, fmt.Errorf("row hashes: %w", unavailable(err))
	}
	var id string
	var b []byte
	if _, err := pgx.ForEachRow(rows, []any{&id, &b}, func() error {
		out[id] = append([]byte(nil), b...)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("row hashes: %w", unavailable(err))
	}
	return out, nil
}
