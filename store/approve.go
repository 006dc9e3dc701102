package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

// approvalTx is regression.ApprovalTx on one Postgres transaction.
type approvalTx struct {
	s  *Store
	tx pgx.Tx
}

var _ regression.ApprovalTx = approvalTx{}

func (a approvalTx) LockRun(ctx context.Context, runID string) (*regression.Run, error) {
	return a.s.getRunWhere(ctx, a.tx, `r.id = $1 FOR UPDATE`, runID)
}

func (a approvalTx) LockSuite(ctx context.Context, suiteID string) error {
	_, err := a.tx.Exec(ctx, `SELECT 1 FROM suites WHERE id = $1 FOR UPDATE`, suiteID)
	return err
}

func (a approvalTx) CountComparisons(ctx context.Context, runID string, ids []string) (int, error) {
	var known int
	err := a.tx.QueryRow(ctx, `SELECT count(*) FROM comparisons WHERE run_id = $1 AND id = ANY($2::uuid[])`,
		runID, ids).Scan(&known)
	return known, err
}

func (a approvalTx) ApprovalPicks(ctx context.Context, runID string, ap regression.Approval) ([]*regression.Comparison, error) {
	rows, err := a.tx.Query(ctx, `WITH picked AS (
			SELECT id, job_id, checkpoint FROM comparisons WHERE run_id = $1 AND approved_at IS NULL
			AND status IN ('failed', 'new', 'missing')
			AND ($2 OR target = ANY($3::text[]) OR id = ANY($4::uuid[]) OR status = ANY($5::text[])))
		SELECT id, target, viewport, segment, status, coalesce(current_artifact_id::text, ''), checkpoint
		FROM comparisons WHERE id IN (SELECT id FROM picked)
		OR (run_id = $1 AND approved_at IS NULL AND diff_mode = 'aligned' AND status = 'passed'
			AND (shifted_px <> 0 OR current_artifact_id IS NULL) AND (job_id, checkpoint) IN (SELECT job_id, checkpoint FROM picked))`,
		runID, ap.All, nonNil(ap.Targets), nonNil(ap.Comparisons), statusStrings(ap.Statuses))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*regression.Comparison, error) {
		var c regression.Comparison
		var art string
		err := r.Scan(&c.ID, &c.Target, &c.Viewport, &c.Segment, &c.Status, &art, &c.Checkpoint)
		if art != "" {
			c.CurrentArtifact = &jobs.Artifact{ID: art}
		}
		return &c, err
	})
}

// Promote sends every baseline's version in one round trip (a run of
// thousands approves in one request), then one update.
func (a approvalTx) Promote(ctx context.Context, bs []*regression.Baseline, ids []string) error {
	var batch pgx.Batch
	for _, b := range bs {
		var art *string
		if b.Artifact != nil {
			art = &b.Artifact.ID
		}
		batch.Queue(`INSERT INTO baselines (id, suite_id, target, viewport, segment, version,
			artifact_id, run_id, approved_by, branch, checkpoint)
			SELECT $1::uuid, $2::uuid, $3::text, $4::text, $5::int, coalesce(max(version), 0) + 1, $6::uuid, $7::uuid,
				$8::text, $9::text, $10::text
			FROM baselines
			WHERE suite_id = $2 AND branch = $9 AND target = $3 AND checkpoint = $10 AND viewport = $4 AND segment = $5`,
			b.ID, b.SuiteID, b.Target, b.Viewport, b.Segment, art, b.RunID, b.ApprovedBy, b.Branch, b.Checkpoint)
	}
	if err := a.tx.SendBatch(ctx, &batch).Close(); err != nil {
		return fmt.Errorf("insert baseline: %w", err)
	}
	_, err := a.tx.Exec(ctx, `UPDATE comparisons SET approved_at = now(), rejected_at = NULL, rejected_by = ''
		WHERE id = ANY($1::uuid[])`, ids)
	return err
}

func (a approvalTx) SettleApproved(ctx context.Context, runID string) error {
	_, err := a.tx.Exec(ctx, `UPDATE runs SET status = 'approved' WHERE id = $1 AND NOT EXISTS (
		SELECT 1 FROM comparisons WHERE run_id = $1 AND approved_at IS NULL AND status IN ('failed', 'new', 'missing'))`, runID)
	return err
}
