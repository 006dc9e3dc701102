package regression

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/snapq/snapq/jobs"
)

// Volatility (issue 30): where a suite's pages change by themselves. From
// the changes its last runs' comparisons stored (the elements they were
// explained by, changes.go), each region — a target, a viewport and the
// stable selector of an element, so content that shifted maps to the same
// region — gets the share of those runs in which it changed in place (its
// text, image, frame content or style; not added, removed or moved, which
// is what a real change of layout looks like). Changes a rule already
// suppressed do not count. A region that changed in at least threshold of
// at least min_runs runs is volatile, and each volatile region is offered
// as an ignore_element rule with its preview: how many of those runs'
// changes it would have suppressed. Nothing is applied: a human accepts a
// suggestion by creating the rule (POST /v1/suites/:id/rules).

// Volatility bounds and defaults.
const (
	DefaultVolatilityRuns      = RuleStatsRuns
	MaxVolatilityRuns          = 50
	DefaultVolatilityMinRuns   = 5
	DefaultVolatilityThreshold = 0.5
	// maxVolatilityRegions bounds the regions an answer lists (the most
	// volatile first).
	maxVolatilityRegions = 200
	// maxSuggestions bounds the suggestions (each one a preview).
	maxSuggestions = 20
)

// VolatilityQuery is what GET /v1/suites/:id/volatility asks.
type VolatilityQuery struct {
	Runs      int
	MinRuns   int
	Threshold float64
}

// Validate fills the defaults and names a bad field.
func (q *VolatilityQuery) Validate() error {
	var errs jobs.FieldErrors
	if q.Runs == 0 {
		q.Runs = DefaultVolatilityRuns
	}
	if q.MinRuns == 0 {
		q.MinRuns = DefaultVolatilityMinRuns
	}
	if q.Threshold == 0 {
		q.Threshold = DefaultVolatilityThreshold
	}
	if q.Runs < 1 || q.Runs > MaxVolatilityRuns {
		errs.Add("invalid_option", "runs", fmt.Sprintf("must be 1 to %d", MaxVolatilityRuns))
	}
	if q.MinRuns < 1 || q.MinRuns > q.Runs {
		errs.Add("invalid_option", "min_runs", "must be 1 to runs")
	}
	if !(q.Threshold > 0 && q.Threshold <= 1) {
		errs.Add("invalid_option", "threshold", "must be a share above 0 and at most 1")
	}
	if len(errs) > 0 {
		return jobs.ValidationErrors(errs)
	}
	return nil
}

// Region is one element of a target at a viewport and how often it changed.
type Region struct {
	Target      string `json:"target"`
	Viewport    string `json:"viewport"`
	Selector    string `json:"selector"`
	ChangedRuns int    `json:"changed_runs"`
	// ApprovedRuns counts the runs in which a human approved a change of
	// the region: a real change, so the region is not volatile.
	ApprovedRuns int      `json:"approved_runs"`
	Share        float64  `json:"share"`
	Volatile     bool     `json:"volatile"`
	Kinds        []string `json:"kinds"`
	// Segment and Box place the region for a heat map: the element's box
	// in that segment's image at one of its changes (nil: not recorded).
	Segment int   `json:"segment,omitempty"`
	Box     *Rect `json:"box,omitempty"`
}

// Suggestion is a rule for a volatile region and what it would have done.
type Suggestion struct {
	Rule    SuggestedRule `json:"rule"`
	Preview Preview       `json:"preview"`
}

// SuggestedRule is the body of the POST /v1/suites/:id/rules that accepts
// a suggestion.
type SuggestedRule struct {
	Kind     string `json:"kind"`
	Selector string `json:"selector"`
	Target   string `json:"target"`
}

// Volatility is the answer of GET /v1/suites/:id/volatility.
type Volatility struct {
	SuiteID     string       `json:"suite_id"`
	Runs        int          `json:"runs"`
	MinRuns     int          `json:"min_runs"`
	Threshold   float64      `json:"threshold"`
	Regions     []Region     `json:"regions"`
	Suggestions []Suggestion `json:"suggestions"`
}

// volatileKinds are the changes of an element that stayed where it was.
var volatileKinds = map[string]bool{ChangeText: true, ChangeImage: true, ChangeFrame: true, ChangeStyle: true}

// LearnVolatility learns the volatility of suite s over its last q.Runs runs.
func LearnVolatility(ctx context.Context, st RuleStore, s *Suite, q VolatilityQuery) (*Volatility, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	runs, err := st.RecentRunCount(ctx, s.ID, q.Runs)
	if err != nil {
		return nil, err
	}
	tcs, err := st.RecentChanges(ctx, s.ID, q.Runs, maxPreviewChanges)
	if err != nil {
		return nil, err
	}
	v := &Volatility{SuiteID: s.ID, Runs: runs, MinRuns: q.MinRuns, Threshold: q.Threshold,
		Regions: learnRegions(tcs, runs, q), Suggestions: []Suggestion{}}
	deadline := time.Now().Add(PreviewBudget)
	for _, r := range v.Regions {
		if !r.Volatile || len(v.Suggestions) >= maxSuggestions {
			continue
		}
		in := SuggestedRule{Kind: RuleIgnoreElement, Selector: r.Selector, Target: r.Target}
		rule, err := NewRule(s, RuleInput{Kind: in.Kind, Selector: in.Selector, Target: in.Target}, time.Now().UTC())
		if err != nil {
			continue // a selector no rule can hold
		}
		p, err := previewChanges(ctx, rule, tcs, deadline)
		if err != nil {
			return nil, err
		}
		p.Runs = runs
		v.Suggestions = append(v.Suggestions, Suggestion{Rule: in, Preview: p})
	}
	return v, nil
}

// learnRegions counts, per region, the runs in which it changed in place
// (a change a learned mask took out counts: it still changed), and the runs
// in which a human approved a change of it: such a region is not volatile.
func learnRegions(tcs []TargetChange, runs int, q VolatilityQuery) []Region {
	type key struct{ target, viewport, selector string }
	seen := map[key]map[string]bool{} // region → runs it changed in
	kinds := map[key]map[string]bool{}
	approved := map[key]map[string]bool{} // region → runs a change of it was approved in
	where := map[key]TargetChange{}       // region → a change that places it
	for _, tc := range tcs {
		ch := tc.Change
		if ch.Selector == "" || (ch.SuppressedBy != "" && ch.SuppressedBy != SuppressedByVolatility) {
			continue
		}
		k := key{tc.Target, tc.Viewport, ch.Selector}
		if tc.Approved && ch.SuppressedBy == "" {
			if approved[k] == nil {
				approved[k] = map[string]bool{}
			}
			approved[k][tc.RunID] = true
		}
		if !volatileKinds[ch.Kind] {
			continue
		}
		if seen[k] == nil {
			seen[k], kinds[k] = map[string]bool{}, map[string]bool{}
		}
		seen[k][tc.RunID] = true
		kinds[k][ch.Kind] = true
		if _, ok := where[k]; !ok {
			where[k] = tc
		}
	}
	out := make([]Region, 0, len(seen))
	for k, rs := range seen {
		r := Region{Target: k.target, Viewport: k.viewport, Selector: k.selector, ChangedRuns: len(rs), ApprovedRuns: len(approved[k])}
		if runs > 0 {
			r.Share = float64(len(rs)) / float64(runs)
		}
		for kind := range kinds[k] {
			r.Kinds = append(r.Kinds, kind)
		}
		sort.Strings(r.Kinds)
		r.Segment, r.Box = placeOf(where[k])
		r.Volatile = runs >= q.MinRuns && r.Share >= q.Threshold && r.ApprovedRuns == 0 &&
			!pageSized(k.viewport, r.Box)
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.ChangedRuns != b.ChangedRuns {
			return a.ChangedRuns > b.ChangedRuns
		}
		return a.Target+a.Viewport+a.Selector < b.Target+b.Viewport+b.Selector
	})
	return out[:min(len(out), maxVolatilityRegions)]
}

// pageSized reports whether box is page content rather than a widget:
// taller than the viewport or covering more than 80 % of its area (a change
// attributed to a common ancestor such as "body > main"). Such a region is
// never volatile: masking it would hide every real change inside it.
func pageSized(viewport string, box *Rect) bool {
	var w, h int
	if box == nil {
		return false
	}
	if n, _ := fmt.Sscanf(viewport, "%dx%d", &w, &h); n != 2 || w <= 0 || h <= 0 {
		return false
	}
	return box.Height > h || box.Width*box.Height*5 > w*h*4
}

// placeOf is the segment and the element's box (segment image px) of a
// change; no box when it recorded none.
func placeOf(tc TargetChange) (int, *Rect) {
	b := tc.Change.Box
	if st := tc.Change.After; st != nil {
		b = st.Box
	} else if st := tc.Change.Before; st != nil {
		b = st.Box
	}
	if b.Width <= 0 || b.Height <= 0 {
		return tc.Segment, nil
	}
	return tc.Segment, &b
}
