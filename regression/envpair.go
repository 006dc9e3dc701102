package regression

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/snapq/snapq/jobs"
)

// Environment pairs: a run started with compare_to_base_url captures every
// target and viewport twice, in the same batch and enqueued together — on
// the run's own origin (its targets, or base_url) and on the reference
// origin — and diffs each capture with its reference capture. The reference
// plays the baseline's part: threshold, ignore and the diff mode apply as
// usual, but no baseline is read or written, and such a run cannot be
// approved (ErrPairRunNotApprovable): there is nothing to promote.

// ErrPairRunNotApprovable is Approve's answer for an environment pair run.
// The api answers 409 pair_run_not_approvable.
var ErrPairRunNotApprovable = errors.New("an environment pair run compares two origins with each other and has no baselines to approve; fix the difference or run the suite against baselines")

// ReferenceSuffix ends the name of a pair run's reference capture job
// ("home-1280x800.reference"), so its files never take the names of the
// run's own capture's.
const ReferenceSuffix = ".reference"

// pairJobs makes the reference capture of each of a run's captures: the
// same target, viewport and options on the origin compareTo. It returns
// the reference jobs in the order of keys.
func pairJobs(spec SuiteSpec, original []SuiteTarget, compareTo string) ([]jobs.NewJob, error) {
	ref, err := WithBaseURL(original, compareTo)
	if err != nil {
		return nil, err
	}
	spec.Targets = ref
	out, _, err := spec.Captures()
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Name += ReferenceSuffix
	}
	return out, nil
}

// comparePair compares a pair run's capture of key with its reference
// capture, once both are final; before that it does nothing (the other
// capture's own comparison task, enqueued when it becomes final, will).
// It returns false when it did nothing.
func (c *Comparer) comparePair(ctx context.Context, run *Run, key CaptureKey) ([]*Comparison, []*jobs.Artifact, bool, error) {
	cur, err := c.Repo.GetJob(ctx, key.JobID)
	if err != nil {
		return nil, nil, false, fmt.Errorf("load job %s: %w", key.JobID, err)
	}
	ref, err := c.Repo.GetJob(ctx, key.ReferenceJobID)
	if err != nil {
		return nil, nil, false, fmt.Errorf("load reference job %s: %w", key.ReferenceJobID, err)
	}
	if !cur.Terminal() || !ref.Terminal() {
		return nil, nil, false, nil
	}
	bad := ""
	switch q := suspect(ref); {
	case ref.Status != jobs.StatusSucceeded:
		_, msg := failedStep(ref)
		bad = "the reference capture (" + ref.URL + ") failed: " + msg
	case q != nil:
		bad = "the reference capture (" + ref.URL + ") is suspect: " + fmt.Sprint(q.Reasons)
	}
	if q := suspect(cur); cur.Status == jobs.StatusSucceeded && q != nil {
		bad = "the capture is suspect: " + fmt.Sprint(q.Reasons)
	}
	if bad != "" {
		return []*Comparison{{Segment: 1, Status: CompareError, Message: bad}}, nil, true, nil
	}
	bases, err := c.referenceBaselines(ctx, ref)
	if err != nil {
		return nil, nil, false, err
	}
	cs, diffs, err := c.compareCheckpoints(ctx, run, key, cur, bases)
	if err != nil {
		return nil, nil, false, err
	}
	return cs, diffs, true, nil
}

// referenceBaselines are a reference capture's screenshots in the form of
// baselines (no id, no version): segment n of each checkpoint is its n-th
// image.
func (c *Comparer) referenceBaselines(ctx context.Context, ref *jobs.Job) ([]*Baseline, error) {
	arts, err := c.Repo.ListArtifacts(ctx, ref.ID)
	if err != nil {
		return nil, fmt.Errorf("list artifacts of reference job %s: %w", ref.ID, err)
	}
	byCP := map[string][]*jobs.Artifact{}
	for _, a := range arts {
		if a.Kind != jobs.KindScreenshot {
			continue
		}
		if cp, ok := checkpointOf(ref.Name, a.Name); ok {
			byCP[cp] = append(byCP[cp], a)
		}
	}
	var out []*Baseline
	for cp, as := range byCP {
		sort.Slice(as, func(i, j int) bool { return as[i].Seq < as[j].Seq })
		for i, a := range as {
			out = append(out, &Baseline{Checkpoint: cp, Segment: i + 1, Artifact: a, Active: true})
		}
	}
	return out, nil
}
