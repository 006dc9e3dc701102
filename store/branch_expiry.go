package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

var _ regression.BranchBaselineStore = (*Store)(nil)

// branchLastActivity is, for a suite's branch key (suite $1, branch $2), the
// newest of its baselines' approvals and its runs.
const branchLastActivity = `greatest(
	(SELECT max(b.approved_at) FROM baselines b WHERE b.suite_id = $1 AND b.branch = $2),
	(SELECT max(r.created_at) FROM runs r WHERE r.suite_id = $1 AND r.branch = $2))`

// StaleBranches implements regression.BranchBaselineStore: branches with
// baselines (never the main line) idle past their suite's days, else
// defaultDays; the longest idle first.
func (s *Store) StaleBranches(ctx context.Context, now time.Time, defaultDays, limit int) ([]regression.StaleBranch, error) {
	rows, err := s.pool.Query(ctx, `WITH br AS (
			SELECT suite_id, branch, max(approved_at) AS approved FROM baselines WHERE branch <> '' GROUP BY suite_id, branch),
		act AS (
			SELECT br.suite_id, br.branch, (s.spec->>'branch_baseline_days')::int AS days,
				greatest(br.approved, (SELECT max(r.created_at) FROM runs r WHERE r.suite_id = br.suite_id AND r.branch = br.branch)) AS last
			FROM br JOIN suites s ON s.id = br.suite_id)
		SELECT suite_id::text, branch, last, days FROM act
		WHERE coalesce(days, $2::int) > 0 AND last <= $1::timestamptz - coalesce(days, $2::int) * interval '24 hours'
		ORDER BY last, suite_id, branch LIMIT $3`, now, defaultDays, limit)
	if err != nil {
		return nil, fmt.Errorf("stale branches: %w", err)
	}
	var out []regression.StaleBranch
	var b regression.StaleBranch
	var days *int
	if _, err := pgx.ForEachRow(rows, []any{&b.SuiteID, &b.Branch, &b.LastActivity, &days}, func() error {
		b.SuiteDays = copyInt(days)
		out = append(out, b)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("stale branches: %w", err)
	}
	return out, nil
}

// DeleteBranchBaselines implements regression.BranchBaselineStore. It
// takes the suite's lock (approvals and merges number versions under it),
// checks again that the branch was idle since notAfter, and deletes every
// version of its baselines; comparisons keep their images (baseline_id is
// set null).
func (s *Store) DeleteBranchBaselines(ctx context.Context, suiteID, branch string, notAfter time.Time, dryRun bool) (int, error) {
	if branch == regression.MainLine {
		return 0, errors.New("the main branch's baselines never expire")
	}
	n := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM suites WHERE id = $1 FOR UPDATE`, suiteID); err != nil {
			return err
		}
		var last *time.Time
		if err := tx.QueryRow(ctx, `SELECT `+branchLastActivity, suiteID, branch).Scan(&last); err != nil {
			return fmt.Errorf("last activity: %w", err)
		}
		if last == nil || last.After(notAfter) {
			return nil
		}
		tag, err := tx.Exec(ctx, `DELETE FROM baselines WHERE suite_id = $1 AND branch = $2`, suiteID, branch)
		if err != nil {
			return fmt.Errorf("delete baselines: %w", err)
		}
		n = int(tag.RowsAffected())
		if dryRun {
			return errKeep // roll back: the count says what would have gone
		}
		return nil
	})
	if errors.Is(err, errKeep) {
		err = nil
	}
	if err != nil {
		return 0, fmt.Errorf("expire branch %q of suite %s: %w", branch, suiteID, err)
	}
	return n, nil
}

// WithCheckRun implements regression.VCSStore: under a transaction-scoped
// advisory lock on the run (not its row: comparisons lock that, and fn
// calls GitHub), fn sees the stored check run id and its answer is kept.
func (s *Store) WithCheckRun(ctx context.Context, runID string, fn func(id string) (string, error)) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('snapq.check_run:' || $1::text, 0))`, runID); err != nil {
			return fmt.Errorf("lock the run's check run: %w", err)
		}
		var id string
		if err := tx.QueryRow(ctx, `SELECT vcs_check_run FROM runs WHERE id = $1`, runID).Scan(&id); errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("run %s: %w", runID, jobs.ErrNotFound)
		} else if err != nil {
			return err
		}
		newID, err := fn(id)
		if err != nil {
			return err
		}
		if newID != id {
			_, err = tx.Exec(ctx, `UPDATE runs SET vcs_check_run = $2 WHERE id = $1`, runID, newID)
		}
		return err
	})
}
