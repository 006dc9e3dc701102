package store

import (
	"context"
	"fmt"
)

// HoldForTest begins a transaction that runs sql (a lock taken FOR UPDATE,
// or an advisory lock) and keeps it open until the returned func is called.
func (s *Store) HoldForTest(ctx context.Context, sql string, args ...any) (end func(), err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		tx.Rollback(ctx) //nolint:errcheck
		return nil, err
	}
	return func() { tx.Rollback(context.Background()) }, nil //nolint:errcheck
}

// DispatchLockSQL takes the dispatch passes' advisory lock.
var DispatchLockSQL = fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d, hashtext(current_schema()))`, dispatchLockSpace)
