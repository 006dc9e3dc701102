package regression

import (
	"context"
	"fmt"
)

// Approval memory (issue 16, review at scale): a current image identical to
// a previously approved version of its baseline — superseded since — passes
// and names that version, so a page toggling between two approved states
// costs no review. Identity is the sha256 of the image's bytes: Chromium
// encodes the same pixels to the same PNG bytes.

// rememberApprovals passes each failed comparison whose current image has
// the sha256 of an earlier version of its baseline (same branch chain,
// target, checkpoint, viewport and segment), naming the newest such version.
func (c *Comparer) rememberApprovals(ctx context.Context, run *Run, key CaptureKey, cs []*Comparison) error {
	var failed []*Comparison
	for _, cmp := range cs {
		if cmp.Status == CompareFailed && cmp.CurrentArtifact != nil && cmp.CurrentArtifact.SHA256 != "" {
			failed = append(failed, cmp)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	versions, err := c.Repo.BaselineVersions(ctx, run.SuiteID, run.BaselineBranches(), key)
	if err != nil {
		return fmt.Errorf("load baseline versions: %w", err)
	}
	for _, cmp := range failed {
		if b := previousMatch(cmp, versions); b != nil {
			cmp.Status = ComparePassed
			cmp.MatchesPrevious = &PreviousMatch{BaselineID: b.ID, Version: b.Version}
			cmp.Message = fmt.Sprintf("identical to baseline version %d (approved %s by %s); %s",
				b.Version, b.ApprovedAt.UTC().Format("2006-01-02 15:04"), b.ApprovedBy, cmp.Message)
		}
	}
	return nil
}

// previousMatch is the newest version, other than the one compared with,
// of the comparison's baseline whose image has the current image's sha256;
// versions come newest first, the run's own branch before its base.
func previousMatch(cmp *Comparison, versions []*Baseline) *Baseline {
	for _, b := range versions {
		if b.Checkpoint != cmp.Checkpoint || b.Segment != cmp.Segment || b.ID == cmp.BaselineID || b.Artifact == nil {
			continue
		}
		if b.Artifact.SHA256 == cmp.CurrentArtifact.SHA256 {
			return b
		}
	}
	return nil
}
