package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/maintenance"
)

// Deleting an object is check-then-act: no row names it, then it goes. A
// commit naming the object between the two (a cache hit copying rows, a
// capture whose content-addressed upload found the bytes already stored)
// would keep a row pointing at nothing. So a deleter marks the objects it
// will delete (object_tombstones) in the transaction that found them
// unreferenced, holding each key's advisory lock; a commit naming a key
// takes the same lock (shared) and refuses a key it reuses that is marked
// (jobs.ErrObjectGone: the attempt is retried and uploads the bytes again).
// A key the commit uploaded afresh is the new object: its mark goes.

var _ maintenance.ObjectMarker = (*Store)(nil)

// tombstoneWindow is how long a mark refuses reuse: the sweep's grace,
// longer than any upload-to-commit gap of a live attempt.
const tombstoneWindow = `interval '1 hour'`

// lockObjectKeys takes keys' transaction advisory locks in key order:
// exclusive for a deleter, shared for a commit naming them.
func lockObjectKeys(ctx context.Context, tx pgx.Tx, keys []string, exclusive bool) error {
	if len(keys) == 0 {
		return nil
	}
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	fn := "pg_advisory_xact_lock_shared"
	if exclusive {
		fn = "pg_advisory_xact_lock"
	}
	if _, err := tx.Exec(ctx, `SELECT `+fn+`(hashtextextended(k, 26))
		FROM (SELECT k FROM unnest($1::text[]) AS k ORDER BY k) s`, sorted); err != nil {
		return fmt.Errorf("lock object keys: %w", err)
	}
	return nil
}

// markUnreferenced locks keys, and marks and returns those no artifact or
// thumbnail row names (in tx: rows it deleted do not count).
func markUnreferenced(ctx context.Context, tx pgx.Tx, keys []string) (map[string]bool, error) {
	if err := lockObjectKeys(ctx, tx, keys, true); err != nil {
		return nil, err
	}
	still, err := referencedKeys(ctx, tx, keys)
	if err != nil {
		return nil, err
	}
	var free []string
	for _, k := range keys {
		if !still[k] {
			free = append(free, k)
		}
	}
	out := make(map[string]bool, len(free))
	if len(free) == 0 {
		return out, nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO object_tombstones (object_key) SELECT DISTINCT unnest($1::text[])
		ON CONFLICT (object_key) DO UPDATE SET state = 'deleting', marked_at = now(), deleted_at = NULL`, free); err != nil {
		return nil, fmt.Errorf("mark objects: %w", err)
	}
	for _, k := range free {
		out[k] = true
	}
	return out, nil
}

// MarkUnreferenced implements maintenance.ObjectMarker.
func (s *Store) MarkUnreferenced(ctx context.Context, keys []string) (map[string]bool, error) {
	var out map[string]bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = markUnreferenced(ctx, tx, keys)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("mark unreferenced objects: %w", err)
	}
	return out, nil
}

// FinishObjectDeletion implements maintenance.ObjectMarker: deleted keys stay
// marked for the window (a reuse that began before the delete is refused),
// kept ones are unmarked, and marks past twice the window go.
func (s *Store) FinishObjectDeletion(ctx context.Context, deleted, kept []string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE object_tombstones SET state = 'deleted', deleted_at = now()
		WHERE object_key = ANY($1::text[])`, deleted); err != nil {
		return fmt.Errorf("objects deleted: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM object_tombstones WHERE (object_key = ANY($1::text[]) AND state = 'deleting')
		OR coalesce(deleted_at, marked_at) < now() - 2 * `+tombstoneWindow, kept); err != nil {
		return fmt.Errorf("objects kept: %w", err)
	}
	return nil
}

// tombstoneHook, when set (tests), runs in checkTombstones under the locks.
var tombstoneHook func()

// checkTombstones is the reuse side, in a commit's tx naming arts' objects:
// it refuses a reused key marked within the window, and unmarks keys the
// attempt uploaded afresh (queueTombstones).
func checkTombstones(ctx context.Context, tx pgx.Tx, arts []*jobs.Artifact) error {
	b := &pgx.Batch{}
	queueTombstones(b, arts)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	if tombstoneHook != nil {
		tombstoneHook()
	}
	return nil
}
