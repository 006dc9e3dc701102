package regression

import (
	"context"
	"fmt"

	"github.com/snapq/snapq/jobs"
)

// ApprovalTx is an approval's view of the store: one transaction, so every
// call sees and changes the same state and a failure leaves nothing.
// store.Store's Approve opens one and runs Approve in it.
type ApprovalTx interface {
	// LockRun returns the run (without its comparisons), locked until the
	// transaction ends.
	LockRun(ctx context.Context, runID string) (*Run, error)
	// LockSuite locks a suite until the transaction ends: its baseline
	// versions are numbered under this lock.
	LockSuite(ctx context.Context, suiteID string) error
	// CountComparisons counts how many of ids are comparisons of the run.
	CountComparisons(ctx context.Context, runID string, ids []string) (int, error)
	// ApprovalPicks lists the run's unapproved comparisons a selects:
	// failed, new or missing ones, all of them or those of the targets, ids
	// or statuses it names; and, with them, the unapproved passed aligned
	// comparisons of the same capture and checkpoint whose content moved or
	// went past the page's end. Each has its ID, Target, Viewport, Segment,
	// Checkpoint, Status and, when it has one, the ID of its
	// CurrentArtifact.
	ApprovalPicks(ctx context.Context, runID string, a Approval) ([]*Comparison, error)
	// Promote adds each baseline as the next version of its suite, branch,
	// target, checkpoint, viewport and segment, and marks the comparisons
	// ids approved (and no longer rejected).
	Promote(ctx context.Context, bs []*Baseline, ids []string) error
	// SettleApproved marks the run approved unless one of its failed, new or
	// missing comparisons is still unapproved.
	SettleApproved(ctx context.Context, runID string) error
}

// Approve promotes the comparisons of run runID that a selects to new
// baseline versions approved by by, in tx. An environment pair run has no
// baselines (ErrPairRunNotApprovable); a branch run's approvals are the
// branch's baselines only. In aligned mode the baseline is one page cut into
// segments: approving a change of a capture also approves the capture's
// segments whose content only moved (and removes baseline segments past its
// end), so the baseline segments stay one consistent page (of the same
// checkpoint). A failed or needs_review run with nothing left to review is
// approved.
func Approve(ctx context.Context, tx ApprovalTx, runID string, a Approval, by string) error {
	run, err := tx.LockRun(ctx, runID)
	if err != nil {
		return err
	}
	if run.CompareTo != "" {
		return ErrPairRunNotApprovable
	}
	if err := tx.LockSuite(ctx, run.SuiteID); err != nil {
		return err
	}
	if err := checkApprovalIDs(ctx, tx, runID, a.Comparisons); err != nil {
		return err
	}
	picks, err := tx.ApprovalPicks(ctx, runID, a)
	if err != nil {
		return err
	}
	if len(picks) > 0 {
		branch := run.BaselineBranches()[0]
		bs := make([]*Baseline, len(picks))
		ids := make([]string, len(picks))
		for i, c := range picks {
			bs[i], ids[i] = approvedBaseline(run, branch, c, by), c.ID
		}
		if err := tx.Promote(ctx, bs, ids); err != nil {
			return err
		}
	}
	if run.Status == RunFailed || run.Status == RunNeedsReview {
		return tx.SettleApproved(ctx, runID)
	}
	return nil
}

// checkApprovalIDs is a validation error unless every id is a comparison of
// the run.
func checkApprovalIDs(ctx context.Context, tx ApprovalTx, runID string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	known, err := tx.CountComparisons(ctx, runID, ids)
	if err != nil {
		return err
	}
	if known != len(ids) {
		var errs jobs.FieldErrors
		errs.Add("unknown_comparison", "comparisons", fmt.Sprintf("%d of the %d ids are not comparisons of this run", len(ids)-known, len(ids)))
		return &jobs.ValidationError{Fields: errs}
	}
	return nil
}

// approvedBaseline is the baseline version an approved comparison adds on
// branch: its current image, or none (the segment removed) for a missing
// one and for a passed one without an image (moved off the page's end).
func approvedBaseline(run *Run, branch string, c *Comparison, by string) *Baseline {
	b := &Baseline{ID: jobs.NewID(), SuiteID: run.SuiteID, Target: c.Target, Viewport: c.Viewport, Segment: c.Segment,
		Checkpoint: c.Checkpoint, RunID: run.ID, ApprovedBy: by, Branch: branch}
	if c.Status != CompareMissing && c.CurrentArtifact != nil {
		b.Artifact = c.CurrentArtifact
	}
	return b
}
