package regression

import (
	"context"
	"fmt"
	"image"
	"math"
	"sort"

	"github.com/snapq/snapq/jobs"
)

// Learned masks (issue 30, mask mode). A suite whose volatility mode is
// mask learns, when a final capture is compared, which regions of its
// target at its viewport changed by themselves over the suite's runs before
// this one (the learning of volatility.go, over at most
// VolatilitySettings.window runs), and takes a change of such a region out
// of the comparison when it has the shape of that volatility:
//
//   - the region is the same element (its stable selector), present in
//     both captures: a removed, added or moved element still counts;
//   - the change is of a kind the region showed before (its text, image,
//     frame or style), inside the element's boxes, and the element is not
//     larger than the largest box it had while it changed (with a margin):
//     a change that covers more than the learned region still counts;
//   - no human approved a change of the region in those runs: a change
//     that was approved is a real one, and its region is never masked.
//
// A masked change keeps its place in the comparison's changes, marked
// SuppressedBy = SuppressedByVolatility, and its region is listed on the
// comparison (MaskedRegions): nothing is hidden silently. Masked changes
// still count as changes of their region when the next runs learn, so a
// region does not flicker in and out of the mask.

// Volatility modes (VolatilitySettings.Mode). They are part of the public API.
const (
	VolatilityOff     = "off"
	VolatilitySuggest = "suggest"
	VolatilityMask    = "mask"
)

// SuppressedByVolatility is the SuppressedBy of a change a learned mask took
// out of the comparison.
const SuppressedByVolatility = "volatility"

const (
	// maxVolatilityHistory bounds the stored changes one learning reads.
	maxVolatilityHistory = 20_000
	// maxMaskedRegions bounds the volatile regions one comparison applies
	// (the most often changed first).
	maxMaskedRegions = 100
	// maskSlackPx is how far (image px) a masked change's pixels may pass its
	// element's box: glyphs and anti-aliasing overhang the box a little.
	maskSlackPx = 2
	// maskGrowth is how much larger than its largest learned box an element
	// may be and still be masked.
	maskGrowth = 1.1
)

// VolatilitySettings is a suite's volatility section.
type VolatilitySettings struct {
	// Mode is off (the default), suggest or mask.
	Mode string `json:"mode"`
	// MinRuns: fewer runs than this make nothing volatile (default 5).
	MinRuns int `json:"min_runs"`
	// Threshold is the share of runs a volatile region changed in (default 0.5).
	Threshold float64 `json:"threshold"`
}

// VolatilityOf is the suite's volatility settings with the defaults filled in.
func (sp SuiteSpec) VolatilityOf() VolatilitySettings {
	v := VolatilitySettings{Mode: VolatilityOff, MinRuns: DefaultVolatilityMinRuns, Threshold: DefaultVolatilityThreshold}
	if sp.Volatility != nil {
		v = *sp.Volatility
	}
	return v
}

// window is how many runs the learning reads: at least DefaultVolatilityRuns.
func (v VolatilitySettings) window() int { return max(DefaultVolatilityRuns, v.MinRuns) }

// validateVolatility checks a suite's volatility section and fills its
// defaults (nil: none given, mode off).
func validateVolatility(in *VolatilitySettings, errs *jobs.FieldErrors) *VolatilitySettings {
	if in == nil {
		return nil
	}
	out := *in
	if out.Mode == "" {
		out.Mode = VolatilityOff
	}
	if out.MinRuns == 0 {
		out.MinRuns = DefaultVolatilityMinRuns
	}
	if out.Threshold == 0 {
		out.Threshold = DefaultVolatilityThreshold
	}
	switch out.Mode {
	case VolatilityOff, VolatilitySuggest, VolatilityMask:
	default:
		errs.Add("invalid_option", "volatility.mode", fmt.Sprintf("must be %q, %q or %q", VolatilityOff, VolatilitySuggest, VolatilityMask))
	}
	if out.MinRuns < 1 || out.MinRuns > MaxVolatilityRuns {
		errs.Add("invalid_option", "volatility.min_runs", fmt.Sprintf("must be 1 to %d runs", MaxVolatilityRuns))
	}
	if math.IsNaN(out.Threshold) || !(out.Threshold > 0 && out.Threshold <= 1) {
		errs.Add("invalid_option", "volatility.threshold", "must be a share above 0 and at most 1")
	}
	return &out
}

// VolatilityHistory is what a learning reads of one target at one viewport:
// how many of the suite's runs before the compared one captured it, and
// their stored changes of the final screenshot (each with whether its
// comparison was approved). store.Store reads it.
type VolatilityHistory struct {
	Runs    int
	Changes []TargetChange
}

// VolatilityReader reads the history a learned mask is made from.
// store.Store implements it.
type VolatilityReader interface {
	// VolatilityHistory reads the last runs runs of the suite created before
	// run beforeRunID (not counting it) that compared target at viewport, and
	// at most limit of their final screenshots' changes.
	VolatilityHistory(ctx context.Context, suiteID, beforeRunID, target, viewport string, runs, limit int) (VolatilityHistory, error)
}

// MaskedRegion is a learned-volatile region a comparison masked: listed on
// the comparison so nothing is hidden silently.
type MaskedRegion struct {
	Selector string `json:"selector"`
	// Box is the element's box in the segment image (the union of where it
	// was and where it is), what the dashboard outlines.
	Box Rect `json:"box"`
	// Kinds are the kinds of the changes it masked.
	Kinds []string `json:"kinds"`
	// ChangedRuns of Runs is what it was learned from; Share their ratio.
	ChangedRuns int     `json:"changed_runs"`
	Runs        int     `json:"runs"`
	Share       float64 `json:"share"`
}

// volatileRegion is a region learned volatile for one target and viewport.
type volatileRegion struct {
	Region
	runs       int
	kinds      map[string]bool
	maxW, maxH int // the largest box (image px) the element had while it changed
}

// volatileMask is the learned-volatile regions of one capture, by selector.
type volatileMask struct {
	regions map[string]*volatileRegion
}

// learnMask learns the volatile regions of one target at one viewport from
// its history: a region some approved comparison changed is never volatile.
func learnMask(h VolatilityHistory, set VolatilitySettings) *volatileMask {
	q := VolatilityQuery{Runs: set.window(), MinRuns: set.MinRuns, Threshold: set.Threshold}
	m := &volatileMask{regions: map[string]*volatileRegion{}}
	for _, r := range learnRegions(h.Changes, h.Runs, q) {
		if r.Volatile && len(m.regions) < maxMaskedRegions {
			vr := &volatileRegion{Region: r, runs: h.Runs, kinds: map[string]bool{}}
			for _, k := range r.Kinds {
				vr.kinds[k] = true
			}
			m.regions[r.Selector] = vr
		}
	}
	for _, tc := range h.Changes {
		vr := m.regions[tc.Change.Selector]
		if vr == nil {
			continue
		}
		for _, st := range []*ElementState{tc.Change.Before, tc.Change.After} {
			if st != nil {
				vr.maxW, vr.maxH = max(vr.maxW, st.Box.Width), max(vr.maxH, st.Box.Height)
			}
		}
	}
	if len(m.regions) == 0 {
		return nil
	}
	return m
}

// masks reports whether change ch has the shape of its region's learned
// volatility (see the top of this file).
func (m *volatileMask) masks(ch Change) bool {
	if m == nil || ch.SuppressedBy != "" || ch.Before == nil || ch.After == nil {
		return false
	}
	vr := m.regions[ch.Selector]
	if vr == nil || !vr.kinds[ch.Kind] {
		return false
	}
	if vr.maxW > 0 && (float64(ch.After.Box.Width) > maskGrowth*float64(vr.maxW)+maskSlackPx ||
		float64(ch.After.Box.Height) > maskGrowth*float64(vr.maxH)+maskSlackPx) {
		return false // larger than it ever was while it changed
	}
	el := rectImage(ch.Before.Box).Union(rectImage(ch.After.Box)).Inset(-maskSlackPx)
	return rectImage(ch.Box).In(el)
}

// apply marks the changes the learned regions mask and returns the image
// rectangles of their pixels.
func (m *volatileMask) apply(changes []Change) []image.Rectangle {
	if m == nil {
		return nil
	}
	var out []image.Rectangle
	for i := range changes {
		if m.masks(changes[i]) {
			changes[i].SuppressedBy = SuppressedByVolatility
			out = append(out, rectImage(changes[i].Box))
		}
	}
	return out
}

// regionsOf lists the regions that masked changes of one comparison, by selector.
func (m *volatileMask) regionsOf(changes []Change) []MaskedRegion {
	if m == nil {
		return nil
	}
	idx := map[string]int{}
	var out []MaskedRegion
	for _, ch := range changes {
		if ch.SuppressedBy != SuppressedByVolatility {
			continue
		}
		box := union(ch.Before.Box, ch.After.Box)
		i, ok := idx[ch.Selector]
		if !ok {
			vr := m.regions[ch.Selector]
			idx[ch.Selector], i = len(out), len(out)
			out = append(out, MaskedRegion{Selector: ch.Selector, Box: box, ChangedRuns: vr.ChangedRuns, Runs: vr.runs, Share: vr.Share})
		}
		out[i].Box = union(out[i].Box, box)
		if !contains(out[i].Kinds, ch.Kind) {
			out[i].Kinds = append(out[i].Kinds, ch.Kind)
			sort.Strings(out[i].Kinds)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func rectImage(r Rect) image.Rectangle { return image.Rect(r.X, r.Y, r.X+r.Width, r.Y+r.Height) }

// maskCache keeps the learned masks of recent captures (run, target,
// viewport): a comparison run again, or retried, learns once.
var maskCache = newLRU[string, *volatileMask](1000)

// volatileMaskFor learns the volatile regions of the capture's target and
// viewport when the run's suite masks them (nil otherwise, or when the
// history cannot be read: the comparison goes on without masks).
func (c *Comparer) volatileMaskFor(ctx context.Context, run *Run, target string, job *jobs.Job) *volatileMask {
	set := run.Spec.VolatilityOf()
	vr, ok := c.Rules.(VolatilityReader)
	if set.Mode != VolatilityMask || !ok || run.CompareTo != "" {
		return nil
	}
	viewport := ViewportSize{Width: job.Options.Viewport.Width, Height: job.Options.Viewport.Height}.String()
	key := run.ID + "\x00" + target + "\x00" + viewport
	if m, ok := maskCache.get(key); ok {
		return m
	}
	h, err := vr.VolatilityHistory(ctx, run.SuiteID, run.ID, target, viewport, set.window(), maxVolatilityHistory)
	if err != nil {
		c.logger().Warn("read the volatility history; comparing without learned masks", "run_id", run.ID, "target", target, "err", err)
		return nil
	}
	m := learnMask(h, set)
	maskCache.put(key, m)
	return m
}
