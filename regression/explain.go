package regression

import (
	"context"
	"image"
	"time"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/jobs"
)

// RuleSource gives a comparison the rules of its suite. store.Store implements it.
type RuleSource interface {
	// ListRules returns a suite's rules, expired ones included.
	ListRules(ctx context.Context, suiteID string) ([]*Rule, error)
}

// explain explains one segment's diff by the two captures' box trees and
// applies the suite's rules.
type explain struct {
	base, cur *capture.BoxTree
	rules     *ruleSet
	scale     float64
	offsetY   int
}

// explainer is the explanation of a final screenshot's segment, or nil when
// the current capture recorded no box tree. rules are the suite's rules
// active for target, shared by the segments of one capture (ruleSetFor).
func (c *Comparer) explainer(job *jobs.Job, baseRes *jobs.Result, scale float64, offsetY int, rules *ruleSet) *explain {
	if job.Result == nil || job.Result.Elements == nil {
		return nil
	}
	ex := &explain{cur: job.Result.Elements, rules: rules, scale: scale, offsetY: offsetY}
	if baseRes != nil {
		ex.base = baseRes.Elements
	}
	return ex
}

// ruleSetFor is the suite's rules active for target, compiled, when cp is
// the final capture and it recorded its box tree (nil otherwise): one per
// capture, so each tree's matches are computed once for all its segments.
func (c *Comparer) ruleSetFor(ctx context.Context, run *Run, target string, job *jobs.Job, cp checkpoint) *ruleSet {
	if !cp.final() || job.Result == nil || job.Result.Elements == nil {
		return nil
	}
	rs := newRuleSet(c.activeRules(ctx, run, target))
	rs.volatile = c.volatileMaskFor(ctx, run, target, job)
	return rs
}

// activeRules are the suite's rules active for target now; none when they
// cannot be read (the comparison goes on without them).
func (c *Comparer) activeRules(ctx context.Context, run *Run, target string) []*Rule {
	out := []*Rule{}
	if c.Rules == nil {
		return out
	}
	all, err := c.Rules.ListRules(ctx, run.SuiteID)
	if err != nil {
		c.logger().Warn("load suite rules; comparing without them", "suite_id", run.SuiteID, "err", err)
	}
	now := time.Now()
	for _, r := range all {
		if r.Active(target, now) {
			out = append(out, r)
		}
	}
	return out
}

// explain returns the changes of a diff image and the image rectangles the
// rules take out of the comparison: the boxes of ignored elements in both
// captures and the pixels of suppressed changes.
func (e *explain) explain(d *image.NRGBA) ([]Change, []image.Rectangle) {
	clusters := clusterDiff(d)
	if len(clusters) == 0 {
		return nil, nil
	}
	changes := attribute(e.base, e.cur, clusters, e.scale, e.offsetY)
	mask := applyRules(e.rules, changes, e.base, e.cur)
	var ignored []image.Rectangle
	for i, r := range e.rules.list() {
		if r.Kind != RuleIgnoreElement {
			continue
		}
		var boxes []image.Rectangle
		for _, t := range []*capture.BoxTree{e.base, e.cur} {
			boxes = append(boxes, maskFor(e.rules.boxes(t, i), e.scale, e.offsetY)...)
		}
		for i, ch := range changes {
			b := image.Rect(ch.Box.X, ch.Box.Y, ch.Box.X+ch.Box.Width, ch.Box.Y+ch.Box.Height)
			for _, m := range boxes {
				if ch.SuppressedBy == "" && b.In(m) { // inside an ignored element, whoever it is attributed to
					changes[i].SuppressedBy = r.ID
				}
			}
		}
		ignored = append(ignored, boxes...)
	}
	return changes, append(mask, ignored...)
}
