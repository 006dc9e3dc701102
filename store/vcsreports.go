package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

// A run's reports to its code host, in order (regression.Reporter): what was
// delivered is kept on the run, read and written under one lock per run.

var _ regression.VCSStore = (*Store)(nil)
var _ regression.ApprovalReports = (*Store)(nil)

// WithVCSReport implements regression.VCSStore: under a transaction-scoped
// advisory lock on the run (not its row: comparisons lock that, and fn calls
// the code host), fn sees what the run's reports delivered so far; the state
// it returns is kept even when it also returns an error.
func (s *Store) WithVCSReport(ctx context.Context, runID string, fn func(regression.VCSReportState) (regression.VCSReportState, error)) error {
	var fnErr error
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('snapq.vcs_report:' || $1::text, 0))`, runID); err != nil {
			return fmt.Errorf("lock the run's reports: %w", err)
		}
		var st regression.VCSReportState
		err := tx.QueryRow(ctx, `SELECT vcs_reported_seq, vcs_commented_seq, vcs_check_run FROM runs WHERE id = $1`, runID).
			Scan(&st.Seq, &st.CommentSeq, &st.CheckRunID)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("run %s: %w", runID, jobs.ErrNotFound)
		}
		if err != nil {
			return err
		}
		var next regression.VCSReportState
		next, fnErr = fn(st)
		if next == st {
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE runs SET vcs_reported_seq = $2, vcs_commented_seq = $3, vcs_check_run = $4 WHERE id = $1`,
			runID, next.Seq, next.CommentSeq, next.CheckRunID)
		return err
	})
	if err != nil {
		return fmt.Errorf("report run %s: %w", runID, errors.Join(err, fnErr))
	}
	return fnErr
}

// DecideApprovalReport implements regression.ApprovalReports: under the
// run's row lock (Approve's), the approval's report takes the next number
// and reads the run, so a higher number always reports a newer state.
func (s *Store) DecideApprovalReport(ctx context.Context, runID string) (int, *regression.Run, error) {
	var seq int
	var r *regression.Run
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `UPDATE runs SET vcs_report_seq = vcs_report_seq + 1 WHERE id = $1 RETURNING vcs_report_seq`,
			runID).Scan(&seq); errors.Is(err, pgx.ErrNoRows) {
			return jobs.ErrNotFound
		} else if err != nil {
			return err
		}
		var err error
		r, err = s.getRunWhere(ctx, tx, `r.id = $1`, runID)
		return err
	})
	if err != nil {
		return 0, nil, fmt.Errorf("decide the approval report of run %s: %w", runID, err)
	}
	return seq, r, nil
}
