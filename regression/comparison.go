package regression

import (
	"context"

	"github.com/snapq/snapq/jobs"
)

// comparison is the comparison of one checkpoint of a capture job with its
// baselines, as capture/job.go is one capture: compareCheckpoints makes one
// per checkpoint and compare runs its phases. A final screenshot compared
// aligned (aligned.go) runs baselines → masks → diff, then for each segment
// explain → judge → upload; otherwise each segment is diffed with its
// baseline by index (bySegment).
type comparison struct {
	c      *Comparer
	ctx    context.Context
	run    *Run
	target string
	job    *jobs.Job
	cp     checkpoint
	shots  []*jobs.Artifact // the checkpoint's images, in order
	bases  []*Baseline      // its active baselines
	taken  map[string]bool  // the capture's artifact names; a diff image must not reuse one

	scale float64                 // the capture's device scale factor
	rules *ruleSet                // the suite's rules, loaded once for all the segments
	seen  map[string]*jobs.Result // the results of the baselines' jobs, by job id (baselineResult)
}

// compare pairs the images of the checkpoint with its baselines by segment
// index. Only the final screenshot is compared aligned and masked by the
// ignored elements' boxes (measured for it); a screenshot action's
// checkpoint is masked by the suite's rectangles only.
func (k *comparison) compare() ([]*Comparison, []*jobs.Artifact) {
	k.scale = k.job.Options.Viewport.DeviceScaleFactor
	if k.scale <= 0 {
		k.scale = 1
	}
	k.rules = k.c.ruleSetFor(k.ctx, k.run, k.target, k.job, k.cp)
	k.seen = map[string]*jobs.Result{}
	if k.cp.final() && k.run.Spec.Diff.ModeFor(k.job.Options.Screenshot.Mode) == DiffAligned && len(k.shots) > 0 {
		if cs, diffs, ok := k.aligned(); ok {
			return rulesVerdict(cs, k.rules), diffs
		}
	}
	cs, diffs := k.bySegment()
	return rulesVerdict(cs, k.rules), diffs
}

// bySegment compares each segment with the baseline of the same index.
func (k *comparison) bySegment() ([]*Comparison, []*jobs.Artifact) {
	bySeg := map[int]*Baseline{}
	last := len(k.shots)
	for _, b := range k.bases {
		bySeg[b.Segment] = b
		last = max(last, b.Segment)
	}
	var cs []*Comparison
	var diffs []*jobs.Artifact
	offsetY := 0 // top of the current segment in image pixels
	for seg := 1; seg <= last; seg++ {
		var cur *jobs.Artifact
		if seg <= len(k.shots) {
			cur = k.shots[seg-1]
		}
		base := bySeg[seg]
		if cur == nil && base == nil {
			continue // a gap in the baselines past the page's end
		}
		cmp, d := k.segment(seg, cur, base, offsetY)
		if d != nil {
			diffs = append(diffs, d)
		}
		if cur != nil {
			offsetY += cur.Height
		}
		cs = append(cs, cmp)
	}
	return cs, diffs
}

// segment is the comparison of segment seg, its current image cur and its
// baseline base (either may be missing), and its diff image if it made one.
func (k *comparison) segment(seg int, cur *jobs.Artifact, base *Baseline, offsetY int) (*Comparison, *jobs.Artifact) {
	cmp := &Comparison{Segment: seg, CurrentArtifact: cur, Threshold: k.run.Spec.Threshold, DiffMode: DiffPixel,
		Checkpoint: k.cp.name, Step: k.cp.stepRef()}
	if base != nil {
		cmp.BaselineID, cmp.BaselineArtifact = base.ID, base.Artifact
	}
	switch {
	case cur == nil && k.run.CompareTo != "":
		cmp.Status, cmp.Message = CompareMissing, "the reference origin's page has this segment, this origin's does not"
	case cur == nil:
		cmp.Status, cmp.Message = CompareMissing, "the page no longer has this segment"
	case base == nil && k.run.CompareTo != "":
		cmp.Status, cmp.Message = CompareNew, "this origin's page has this segment, the reference origin's does not"
	case base == nil:
		cmp.Status, cmp.Message = CompareNew, "no approved baseline yet"
	default:
		return cmp, k.diffSegment(cmp, base, seg, offsetY)
	}
	return cmp, nil
}

// diffSegment diffs segment seg with its baseline, masked by the ignored
// elements' boxes where they are now and where they were when the baseline
// was captured (of the final screenshot; the suite's rectangles otherwise).
// A failure makes the comparison an error.
func (k *comparison) diffSegment(cmp *Comparison, base *Baseline, seg, offsetY int) *jobs.Artifact {
	rects := k.run.Spec.Ignore.Rects
	name := checkpointDiffName(k.job.Name, k.cp.name, seg)
	var ex *explain
	if k.cp.final() {
		baseRes := k.c.baselineResult(k.ctx, base, k.seen)
		rects = ignoreRects(ignoreRects(rects, k.job.Result), baseRes)
		name = diffName(k.job.Name, seg, k.taken)
		ex = k.c.explainer(k.job, baseRes, k.scale, offsetY, k.rules)
	}
	d, err := k.c.diffOne(k.ctx, k.job, cmp, maskFor(rects, k.scale, offsetY), k.run.Spec, name, ex)
	if err != nil {
		cmp.Status, cmp.Message = CompareError, err.Error()
		return nil
	}
	return d
}
