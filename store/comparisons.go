package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

// A run's comparisons page by page (the run page of the dashboard with
// thousands of them), and a run without its comparisons.

// comparisonKey is a comparison's place in a run's order: target, viewport,
// the checkpoint's step (the final screenshot last), checkpoint, segment. It
// is unique within a run (the comparisons_checkpoint_key constraint holds
// its columns but the step), so it orders keyset pages.
const comparisonKey = `(target, viewport, coalesce(step, 2147483647), checkpoint, segment)`

// comparisonOrder is comparisonKey as an ORDER BY list.
const comparisonOrder = `target, viewport, coalesce(step, 2147483647), checkpoint, segment`

// GetRunSummary implements regression.Reader: the run with its counts, no
// comparisons or notifications (what routes that do not show them load).
func (s *Store) GetRunSummary(ctx context.Context, id string) (*regression.Run, error) {
	r, err := s.getRunWhere(ctx, nil, `r.id = $1`, id)
	if err != nil && !errors.Is(err, jobs.ErrNotFound) {
		return nil, fmt.Errorf("get run %s: %w", id, err)
	}
	return r, err
}

// ListComparisons implements regression.Reader: one page of a run's
// comparisons in the run's order (GetRun's), after the comparison whose id
// is cursor, with the next page's cursor ("" after the last page). The
// query uses the (run_id, …) unique index to find the run's rows; at a few
// thousand comparisons per run the sort is in memory.
func (s *Store) ListComparisons(ctx context.Context, runID string, f regression.ComparisonFilter, limit int, cursor string) ([]*regression.Comparison, string, error) {
	args := []any{runID, statusStrings(f.Statuses), limit + 1}
	q := `SELECT ` + comparisonColumns + ` FROM comparisons WHERE run_id = $1
		AND (cardinality($2::text[]) = 0 OR status = ANY($2::text[]))`
	if f.Approved != nil {
		args = append(args, *f.Approved)
		q += fmt.Sprintf(` AND (approved_at IS NOT NULL) = $%d`, len(args))
	}
	if cursor != "" {
		var known bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM comparisons WHERE id = $1 AND run_id = $2)`,
			cursor, runID).Scan(&known); err != nil {
			return nil, "", fmt.Errorf("list comparisons: %w", err)
		}
		if !known {
			var errs jobs.FieldErrors
			errs.Add("invalid_query", "cursor", "is not a cursor returned by this API for this run")
			return nil, "", &jobs.ValidationError{Fields: errs}
		}
		args = append(args, cursor)
		q += fmt.Sprintf(` AND %s > (SELECT %s FROM comparisons o WHERE o.id = $%d)`, comparisonKey,
			`o.target, o.viewport, coalesce(o.step, 2147483647), o.checkpoint, o.segment`, len(args))
	}
	rows, err := s.pool.Query(ctx, q+` ORDER BY `+comparisonOrder+` LIMIT $3`, args...)
	out, err := s.scanComparisons(ctx, rows, err)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = out[limit-1].ID
	}
	return out, next, nil
}

// scanComparisons collects comparisonColumns rows (of a Query returning
// rows, err) with their baseline, current and diff artifacts.
func (s *Store) scanComparisons(ctx context.Context, rows pgx.Rows, err error) ([]*regression.Comparison, error) {
	if err != nil {
		return nil, fmt.Errorf("list comparisons: %w", err)
	}
	type ids struct{ base, cur, diff string }
	var refs []ids
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*regression.Comparison, error) {
		var c regression.Comparison
		var ref ids
		err := r.Scan(&c.ID, &c.RunID, &c.JobID, &c.Target, &c.Viewport, &c.Segment, &c.Status, &c.DiffPixels,
			&c.DiffRatio, &c.Threshold, &c.Message, &c.BaselineID, &ref.base, &ref.cur, &ref.diff, &c.ApprovedAt,
			&c.DiffMode, &c.ShiftedPx, &c.Hunks, &c.Checkpoint, &c.Step, &c.FailedStep, &c.GroupKey, &c.MatchesPrevious,
			&c.AutoApproved, &c.RejectedAt, &c.RejectedBy, &c.MaskedRegions)
		refs = append(refs, ref)
		return &c, err
	})
	if err != nil {
		return nil, fmt.Errorf("list comparisons: %w", err)
	}
	var want []string
	for _, r := range refs {
		want = append(want, r.base, r.cur, r.diff)
	}
	arts, err := s.artifactsByID(ctx, want)
	if err != nil {
		return nil, fmt.Errorf("load comparison artifacts: %w", err)
	}
	for i, c := range out {
		c.BaselineArtifact, c.CurrentArtifact, c.DiffArtifact = arts[refs[i].base], arts[refs[i].cur], arts[refs[i].diff]
	}
	return out, nil
}
