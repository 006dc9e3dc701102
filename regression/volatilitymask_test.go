package regression

import (
	"fmt"
	"image"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/jobs"
)

// clockHistory is 4 runs of a page: #clock's text changed in place in 3
// (its box 60-70 px wide), #price's in 3 too but one of those comparisons
// was approved by a human, #ad's image in 1.
func clockHistory() VolatilityHistory {
	h := VolatilityHistory{Runs: 4}
	add := func(run int, kind, sel string, w int, approved bool, suppressedBy string) {
		box := Rect{X: 10, Y: 10, Width: w, Height: 20}
		h.Changes = append(h.Changes, TargetChange{Target: "home", Viewport: "800x600", RunID: fmt.Sprintf("run-%d", run), Approved: approved,
			Change: Change{Kind: kind, Selector: sel, SuppressedBy: suppressedBy, Box: box,
				Before: &ElementState{Box: box}, After: &ElementState{Box: box}}})
	}
	add(1, ChangeText, "#clock", 60, false, "")
	add(2, ChangeText, "#clock", 70, false, "")
	add(3, ChangeText, "#clock", 64, false, SuppressedByVolatility) // masked last time: still a change of its region
	add(1, ChangeText, "#price", 40, false, "")
	add(2, ChangeText, "#price", 40, true, "")
	add(3, ChangeText, "#price", 40, false, "")
	add(2, ChangeImage, "#ad", 300, false, "")
	return h
}

// Learning: a region that changed in place in at least threshold of at
// least min_runs runs is volatile unless a change of it was approved; a
// masked change still counts for its region.
func TestLearnMask(t *testing.T) {
	t.Parallel()
	set := VolatilitySettings{Mode: VolatilityMask, MinRuns: 3, Threshold: 0.5}
	m := learnMask(clockHistory(), set)
	if m == nil {
		t.Fatal("nothing learned")
	}
	var got []string
	for sel := range m.regions {
		got = append(got, sel)
	}
	if diff := cmp.Diff([]string{"#clock"}, got); diff != "" {
		t.Errorf("volatile regions (-want +got):\n%s", diff)
	}
	if c := m.regions["#clock"]; c.ChangedRuns != 3 || c.runs != 4 || c.maxW != 70 {
		t.Errorf("#clock learned = %+v", c)
	}
	if young := learnMask(VolatilityHistory{Runs: 2, Changes: clockHistory().Changes}, set); young != nil {
		t.Errorf("2 runs of min_runs 3 learned %v", young.regions)
	}
	regions := learnRegions(clockHistory().Changes, 4, VolatilityQuery{Runs: 10, MinRuns: 3, Threshold: 0.5})
	for _, r := range regions {
		if r.Selector == "#price" && (r.Volatile || r.ApprovedRuns != 1) {
			t.Errorf("#price (approved once) = %+v, want listed with approved_runs 1, not volatile", r)
		}
	}
}

// Masking: only a change of a learned region's kind, of an element present
// in both captures, inside its boxes and no larger than it was learned, is
// masked; every masked region is listed.
func TestVolatileMaskShape(t *testing.T) {
	t.Parallel()
	m := learnMask(clockHistory(), VolatilitySettings{Mode: VolatilityMask, MinRuns: 3, Threshold: 0.5})
	box := Rect{X: 10, Y: 10, Width: 60, Height: 20}
	wide := Rect{X: 10, Y: 10, Width: 68, Height: 20}
	text := func(sel string, b, a Rect, changed Rect) Change {
		return Change{Kind: ChangeText, Selector: sel, Box: changed, Before: &ElementState{Box: b}, After: &ElementState{Box: a}}
	}
	tests := []struct {
		name string
		ch   Change
		want bool
	}{
		{"text in its box", text("#clock", box, box, Rect{X: 12, Y: 12, Width: 50, Height: 16}), true},
		{"text wider, within the learned size", text("#clock", box, wide, Rect{X: 10, Y: 10, Width: 68, Height: 20}), true},
		{"glyphs overhang by a pixel", text("#clock", box, box, Rect{X: 9, Y: 10, Width: 62, Height: 21}), true},
		{"change spills out of the element", text("#clock", box, box, Rect{X: 10, Y: 10, Width: 200, Height: 20}), false},
		{"element grew past what was learned", text("#clock", box, Rect{X: 10, Y: 10, Width: 300, Height: 200}, Rect{X: 10, Y: 10, Width: 300, Height: 200}), false},
		{"element removed", Change{Kind: ChangeRemoved, Selector: "#clock", Box: box, Before: &ElementState{Box: box}}, false},
		{"element added", Change{Kind: ChangeAdded, Selector: "#clock", Box: box, After: &ElementState{Box: box}}, false},
		{"moved", Change{Kind: ChangeMoved, Selector: "#clock", Box: box, Before: &ElementState{Box: box}, After: &ElementState{Box: box}, DY: 30}, false},
		{"style: a kind it never showed", Change{Kind: ChangeStyle, Selector: "#clock", Box: box, Before: &ElementState{Box: box}, After: &ElementState{Box: box}}, false},
		{"approved region", text("#price", box, box, box), false},
		{"not volatile", text("#ad", box, box, box), false},
		{"already suppressed by a rule", func() Change { c := text("#clock", box, box, box); c.SuppressedBy = "r1"; return c }(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := m.masks(tt.ch); got != tt.want {
				t.Errorf("masks = %v, want %v", got, tt.want)
			}
		})
	}
	changes := []Change{text("#clock", box, wide, Rect{X: 12, Y: 12, Width: 60, Height: 16}), text("#title", box, box, box),
		text("#clock", box, box, Rect{X: 12, Y: 12, Width: 10, Height: 10})}
	rects := m.apply(changes)
	if len(rects) != 2 || changes[0].SuppressedBy != SuppressedByVolatility || changes[1].SuppressedBy != "" {
		t.Fatalf("apply: %v, changes %+v", rects, changes)
	}
	want := []MaskedRegion{{Selector: "#clock", Box: wide, Kinds: []string{ChangeText}, ChangedRuns: 3, Runs: 4, Share: 0.75}}
	if diff := cmp.Diff(want, m.regionsOf(changes)); diff != "" {
		t.Errorf("masked regions (-want +got):\n%s", diff)
	}
}

func TestValidateVolatility(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     *VolatilitySettings
		want   *VolatilitySettings
		fields []string
	}{
		{"none", nil, nil, nil},
		{"defaults", &VolatilitySettings{}, &VolatilitySettings{Mode: VolatilityOff, MinRuns: 5, Threshold: 0.5}, nil},
		{"mask", &VolatilitySettings{Mode: "mask", MinRuns: 2, Threshold: 0.6}, &VolatilitySettings{Mode: "mask", MinRuns: 2, Threshold: 0.6}, nil},
		{"bad", &VolatilitySettings{Mode: "auto", MinRuns: 51, Threshold: 1.5}, nil,
			[]string{"volatility.mode", "volatility.min_runs", "volatility.threshold"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var errs jobs.FieldErrors
			got := validateVolatility(tt.in, &errs)
			var fields []string
			for _, e := range errs {
				fields = append(fields, e.Field)
			}
			if diff := cmp.Diff(tt.fields, fields); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
			if tt.fields == nil {
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("settings (-want +got):\n%s", diff)
				}
			}
		})
	}
	// Through a suite document: the error names the field.
	_, err := ParseSuite([]byte(`{"name": "s", "targets": [{"url": "https://example.com/"}], "volatility": {"mode": "always"}}`))
	if err == nil || !strings.Contains(err.Error(), "volatility.mode") {
		t.Errorf("suite with volatility.mode always: %v", err)
	}
}

// A dynamic_text rule holds when the text's box changes width with the
// text ("52 seconds ago" → "1 minutes ago"), as long as the element keeps
// its left (or right) edge, top and height, its container keeps its box and
// the changed pixels stay within the old and new text boxes.
func TestDynamicTextWidthChanges(t *testing.T) {
	t.Parallel()
	tree := func(text string, w, parentW int) *capture.BoxTree {
		return &capture.BoxTree{Elements: []capture.Element{
			el("body", "body", -1, 0, 0, 800, 600, "Posted "+text, "white"),
			el("p.meta", "p", 0, 10, 100, parentW, 20, "Posted "+text, ""),
			el("span.ago", "span", 1, 60, 100, w, 20, text, ""),
		}}
	}
	rule := &Rule{ID: "r1", Kind: RuleDynamicText, Selector: "span.ago", Pattern: `\d+ (seconds|minutes)`}
	tests := []struct {
		name     string
		base     *capture.BoxTree
		cur      *capture.BoxTree
		cluster  image.Rectangle
		suppress bool
	}{
		{"narrower text", tree("52 seconds ago", 110, 400), tree("1 minutes ago", 95, 400), image.Rect(62, 102, 168, 118), true},
		{"wider text", tree("1 minutes ago", 95, 400), tree("52 seconds ago", 110, 400), image.Rect(62, 102, 168, 118), true},
		{"container changed", tree("52 seconds ago", 110, 400), tree("1 minutes ago", 95, 380), image.Rect(62, 102, 168, 118), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := attribute(tt.base, tt.cur, []image.Rectangle{tt.cluster}, 1, 0)
			if len(got) != 1 || got[0].Kind != ChangeText || got[0].Selector != "span.ago" {
				t.Fatalf("changes = %+v, want one text change of span.ago", got)
			}
			if s := rule.Suppresses(got[0]); s != tt.suppress {
				t.Errorf("suppressed = %v, want %v", s, tt.suppress)
			}
		})
	}
	// The element moved down, or the change reaches past both boxes: a layout change.
	b := &ElementState{Box: Rect{X: 60, Y: 100, Width: 110, Height: 20}, Container: &Rect{X: 10, Y: 100, Width: 400, Height: 20}}
	a := &ElementState{Box: Rect{X: 60, Y: 100, Width: 95, Height: 20}, Container: &Rect{X: 10, Y: 100, Width: 400, Height: 20}}
	moved := *a
	moved.Box.Y = 130
	if sameTextBox(b, &moved, Rect{X: 60, Y: 100, Width: 100, Height: 50}) {
		t.Error("a text that moved down kept its box")
	}
	if sameTextBox(b, a, Rect{X: 60, Y: 100, Width: 300, Height: 20}) {
		t.Error("a change past both text boxes stayed in the box")
	}
}

// BenchmarkLearnMask learns from a full history (maxVolatilityHistory
// changes over 50 runs, 200 selectors): the CPU a comparison spends on it.
func BenchmarkLearnMask(b *testing.B) {
	h := VolatilityHistory{Runs: 50}
	box := Rect{X: 10, Y: 10, Width: 60, Height: 20}
	for i := range maxVolatilityHistory {
		h.Changes = append(h.Changes, TargetChange{Target: "home", Viewport: "800x600", RunID: fmt.Sprintf("run-%d", i/400),
			Change: Change{Kind: ChangeText, Selector: fmt.Sprintf("#el-%d", i%200), Box: box,
				Before: &ElementState{Box: box}, After: &ElementState{Box: box}}})
	}
	set := VolatilitySettings{Mode: VolatilityMask, MinRuns: 5, Threshold: 0.5}
	b.ReportAllocs()
	for b.Loop() {
		if m := learnMask(h, set); m == nil || len(m.regions) != maxMaskedRegions {
			b.Fatalf("learned %v", m)
		}
	}
}
