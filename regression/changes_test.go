package regression

import (
	"errors"
	"image"
	"image/color"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/jobs"
)

// diffImage is a gray diff image with red (differing) rectangles.
func diffImage(w, h int, red ...image.Rectangle) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = 200
	}
	for _, r := range red {
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				img.SetNRGBA(x, y, color.NRGBA{255, 0, 0, 255})
			}
		}
	}
	return img
}

func TestClusterDiff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		red  []image.Rectangle
		want []image.Rectangle
	}{
		{"nothing", nil, nil},
		{"two apart", []image.Rectangle{image.Rect(10, 10, 30, 20), image.Rect(150, 60, 161, 70)},
			[]image.Rectangle{image.Rect(10, 10, 30, 20), image.Rect(150, 60, 161, 70)}},
		{"near ones merge", []image.Rectangle{image.Rect(10, 10, 20, 20), image.Rect(30, 12, 40, 18), image.Rect(150, 90, 151, 91)},
			[]image.Rectangle{image.Rect(10, 10, 40, 20), image.Rect(150, 90, 151, 91)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := clusterDiff(diffImage(200, 100, tt.red...))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("clusters (-want +got):\n%s", diff)
			}
		})
	}
}

// el is a box tree element; text and style feed its hashes.
func el(sel, tag string, parent, x, y, w, h int, text, bg string) capture.Element {
	e := capture.Element{Selector: sel, Tag: tag, Parent: parent, X: x, Y: y, Width: w, Height: h, Text: text,
		Style: capture.Style{Color: "black", Background: bg}}
	if text != "" {
		e.TextHash = "t:" + text
	}
	e.StyleHash = "s:" + bg + ":" + strings.Repeat("w", w) + strings.Repeat("h", h)
	e.Image = tag == "img"
	return e
}

func TestAttribute(t *testing.T) {
	t.Parallel()
	base := &capture.BoxTree{Elements: []capture.Element{
		el("body", "body", -1, 0, 0, 800, 1000, "Welcome Buy Card", "white"),
		el("#title", "h1", 0, 10, 10, 600, 40, "Welcome", ""),
		el("role=button[name=\"Buy\"]", "button", 0, 10, 100, 100, 30, "Buy", "blue"),
		el("[data-testid=\"card\"]", "div", 0, 10, 200, 200, 100, "Card", "gray"),
		el("[data-testid=\"card\"] > h3", "h3", 3, 20, 210, 100, 20, "Card", ""),
		el("#hero", "img", 0, 400, 200, 120, 80, "", ""),
	}}
	cur := &capture.BoxTree{Elements: []capture.Element{
		el("body", "body", -1, 0, 0, 800, 1000, "Goodbye Buy Card", "white"),
		el("#title", "h1", 0, 10, 10, 600, 40, "Goodbye", ""),
		el("role=button[name=\"Buy\"]", "button", 0, 10, 100, 100, 30, "Buy", "red"),
		el("[data-testid=\"card\"]", "div", 0, 10, 230, 200, 100, "Card", "gray"),
		el("[data-testid=\"card\"] > h3", "h3", 3, 20, 240, 100, 20, "Card", ""),
	}}
	clusters := []image.Rectangle{
		image.Rect(12, 14, 90, 40),     // the heading's glyphs
		image.Rect(10, 100, 110, 130),  // the button
		image.Rect(10, 200, 210, 330),  // the card, both places
		image.Rect(400, 200, 520, 280), // the image
		image.Rect(700, 900, 720, 910), // nothing changed there
	}
	got := attribute(base, cur, clusters, 1, 0)
	type brief struct {
		Kind, Selector string
		DY             int
		Props          []string
	}
	var short []brief
	for _, c := range got {
		short = append(short, brief{c.Kind, c.Selector, c.DY, c.Properties})
	}
	want := []brief{
		{ChangeText, "#title", 0, nil},
		{ChangeStyle, `role=button[name="Buy"]`, 0, []string{"background-color"}},
		{ChangeMoved, `[data-testid="card"]`, 30, nil},
		{ChangeRemoved, "#hero", 0, nil},
		{ChangeUnattributed, "", 0, nil},
	}
	if diff := cmp.Diff(want, short); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if got[0].Before.Text != "Welcome" || got[0].After.Text != "Goodbye" {
		t.Errorf("text change before/after = %q/%q", got[0].Before.Text, got[0].After.Text)
	}
	// Device scale 2, a segment starting 100 image px down: boxes in segment image px.
	scaled := attribute(base, cur, []image.Rectangle{image.Rect(20, 100, 220, 160)}, 2, 100)
	if len(scaled) != 1 || scaled[0].Kind != ChangeStyle || scaled[0].After.Box != (Rect{X: 20, Y: 100, Width: 200, Height: 60}) {
		t.Errorf("scaled = %+v", scaled)
	}
}

func TestRuleSuppresses(t *testing.T) {
	t.Parallel()
	clock := []Node{{Tag: "body"}, {Tag: "header", Classes: "top"}, {Tag: "span", Classes: "clock big", Selector: "header.top > span.clock"}}
	box := Rect{X: 10, Y: 5, Width: 60, Height: 20}
	change := func(before, after string, afterBox Rect) Change {
		return Change{Kind: ChangeText, Selector: "header.top > span.clock", Ancestry: clock,
			Before: &ElementState{Box: box, Text: before}, After: &ElementState{Box: afterBox, Text: after}}
	}
	dyn := &Rule{ID: "r1", Kind: RuleDynamicText, Selector: "header .clock", Pattern: `\d{1,2}:\d{2}`}
	ign := &Rule{ID: "r2", Kind: RuleIgnoreElement, Selector: "header"}
	other := &Rule{ID: "r3", Kind: RuleDynamicText, Selector: "footer .clock", Pattern: `\d{1,2}:\d{2}`}
	tests := []struct {
		name string
		rule *Rule
		ch   Change
		want bool
	}{
		{"time only", dyn, change("Now 9:41", "Now 10:42", box), true},
		{"words changed too", dyn, change("Now 9:41", "Then 10:42", box), false},
		{"box grew", dyn, change("Now 9:41", "Now 10:42", Rect{X: 10, Y: 5, Width: 70, Height: 20}), false},
		{"other selector", other, change("Now 9:41", "Now 10:42", box), false},
		{"stable selector", &Rule{Kind: RuleDynamicText, Selector: "header.top > span.clock", Pattern: `\d+`}, change("1", "2", box), true},
		{"role selector", &Rule{Kind: RuleIgnoreElement, Selector: `role=button[name="Buy"]`},
			Change{Kind: ChangeStyle, Ancestry: []Node{{Tag: "body"}, {Tag: "button", Role: "button", Name: "Buy"}}}, true},
		{"ignored ancestor", ign, change("a", "b", box), true},
		{"unattributed", ign, Change{Kind: ChangeUnattributed}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.rule.Suppresses(tt.ch); got != tt.want {
				t.Errorf("Suppresses = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNewRuleValidation(t *testing.T) {
	t.Parallel()
	s := &Suite{ID: "s", Spec: SuiteSpec{Targets: []SuiteTarget{{Name: "home"}}}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	past := now.Add(-time.Hour)
	tests := []struct {
		name  string
		in    RuleInput
		field string
	}{
		{"kind", RuleInput{Kind: "mask", Selector: "h1"}, "kind"},
		{"no selector", RuleInput{Kind: RuleIgnoreElement}, "selector"},
		{"bad selector", RuleInput{Kind: RuleIgnoreElement, Selector: "h1[[["}, "selector"},
		{"bad regex", RuleInput{Kind: RuleDynamicText, Selector: "h1", Pattern: `(\d`}, "pattern"},
		{"backreference is not RE2", RuleInput{Kind: RuleDynamicText, Selector: "h1", Pattern: `(a)\1`}, "pattern"},
		{"long regex", RuleInput{Kind: RuleDynamicText, Selector: "h1", Pattern: strings.Repeat("a", MaxRulePattern+1)}, "pattern"},
		{"empty match", RuleInput{Kind: RuleDynamicText, Selector: "h1", Pattern: `\d*`}, "pattern"},
		{"target", RuleInput{Kind: RuleIgnoreElement, Selector: "h1", Target: "nope"}, "target"},
		{"expired", RuleInput{Kind: RuleIgnoreElement, Selector: "h1", ExpiresAt: &past}, "expires_at"},
		{"ok", RuleInput{Kind: RuleDynamicText, Selector: "header .clock", Pattern: `\d{1,2}:\d{2}`, Target: "home"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := NewRule(s, tt.in, now)
			var ve *jobs.ValidationError
			if tt.field == "" {
				if err != nil || r == nil {
					t.Fatalf("NewRule: %v", err)
				}
				return
			}
			if !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Field != tt.field {
				t.Fatalf("NewRule error = %v, want one naming %s", err, tt.field)
			}
		})
	}
}

func TestRuleActive(t *testing.T) {
	t.Parallel()
	now := time.Now()
	exp := now.Add(-time.Minute)
	r := &Rule{Target: "home"}
	if !r.Active("home", now) || r.Active("about", now) {
		t.Error("a target's rule applies to that target only")
	}
	r = &Rule{ExpiresAt: &exp}
	if r.Active("home", now) {
		t.Error("an expired rule applied")
	}
}

// A heading named by its text gets a new role selector when the text
// changes: it pairs by CSS path and the change names the path.
func TestAttributeRenamedByText(t *testing.T) {
	t.Parallel()
	h := func(name string) capture.Element {
		e := el(`role=heading[name="`+name+`"]`, "h1", 0, 10, 50, 300, 30, name, "")
		e.Path = "body > h1"
		return e
	}
	base := &capture.BoxTree{Elements: []capture.Element{el("body", "body", -1, 0, 0, 400, 200, "x", ""), h("Page 7")}}
	cur := &capture.BoxTree{Elements: []capture.Element{el("body", "body", -1, 0, 0, 400, 200, "x", ""), h("Page 7, edited")}}
	got := attribute(base, cur, []image.Rectangle{image.Rect(12, 52, 150, 75)}, 1, 0)
	if len(got) != 1 || got[0].Kind != ChangeText || got[0].Selector != "body > h1" || got[0].Before.Text != "Page 7" {
		t.Fatalf("changes = %+v", got)
	}
	r := &Rule{Kind: RuleDynamicText, Selector: "body > h1", Pattern: `\d+, edited|\d+`}
	if !r.Suppresses(got[0]) {
		t.Error("a rule by the reported path does not match its change")
	}
}

// Issue 30, defect 3: a change inside an iframe (an ad creative) is the
// frame's content changing, not an unattributed cluster nor the body.
func TestAttributeInsideIframe(t *testing.T) {
	t.Parallel()
	tree := func(bodyBg string) *capture.BoxTree {
		return &capture.BoxTree{Elements: []capture.Element{
			el("body", "body", -1, 0, 0, 800, 1000, "News", bodyBg),
			el("#story", "p", 0, 10, 10, 500, 40, "News", ""),
			el("div.ad-slot", "div", 0, 520, 10, 300, 250, "", ""),
			el("div.ad-slot > iframe", "iframe", 2, 520, 10, 300, 250, "", ""),
		}}
	}
	for _, tt := range []struct {
		name     string
		base     *capture.BoxTree
		cur      *capture.BoxTree
		cluster  image.Rectangle
		wantKind string
		wantSel  string
	}{
		{"inside the frame", tree("white"), tree("white"), image.Rect(540, 30, 700, 200), ChangeFrame, "div.ad-slot > iframe"},
		{"body restyled too", tree("white"), tree("ivory"), image.Rect(540, 30, 700, 200), ChangeFrame, "div.ad-slot > iframe"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := attribute(tt.base, tt.cur, []image.Rectangle{tt.cluster}, 1, 0)
			if len(got) != 1 || got[0].Kind != tt.wantKind || got[0].Selector != tt.wantSel {
				t.Fatalf("changes = %+v, want one %s of %s", got, tt.wantKind, tt.wantSel)
			}
		})
	}
}
