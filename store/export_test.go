package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// FinishBatchForTest runs finishBatch in a transaction of its own.
func (s *Store) FinishBatchForTest(ctx context.Context, batchID string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return finishBatch(ctx, tx, batchID) })
}

// ExecForTest runs one statement on the store's schema.
func (s *Store) ExecForTest(ctx context.Context, sql string, args ...any) error {
	_, err := s.pool.Exec(ctx, sql, args...)
	return err
}

// QueryRowForTest runs one query on the store's schema.
func (s *Store) QueryRowForTest(ctx context.Context, sql string, args ...any) pgx.Row {
	return s.pool.QueryRow(ctx, sql, args...)
}

// Unavailable is unavailable, the classification of pgx errors (tests only).
var Unavailable = unavailable

// SetTombstoneHookForTest sets a function checkTombstones calls once a
// commit holds its keys' locks and has checked them (nil: none).
func SetTombstoneHookForTest(f func()) { tombstoneHook = f }
