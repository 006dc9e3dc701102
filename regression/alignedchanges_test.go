package regression

import (
	"fmt"
	"image"
	"image/color"
	"sort"
	"strings"
	"testing"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/diff"
)

// segmentsOf cuts page into seg px images.
func segmentsOf(page *image.NRGBA, seg int) []image.Image {
	var out []image.Image
	for y := 0; y < page.Rect.Dy(); y += seg {
		out = append(out, page.SubImage(image.Rect(0, y, page.Rect.Dx(), min(y+seg, page.Rect.Dy()))))
	}
	return out
}

// scribble paints r of img dark: a change of an element's pixels.
func scribble(img *image.NRGBA, r image.Rectangle) {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x += 2 {
			img.SetNRGBA(x, y, color.NRGBA{20, 20, 20, 255})
		}
	}
}

func TestAlignedTree(t *testing.T) {
	t.Parallel()
	hunks := []diff.Hunk{
		{Kind: diff.HunkEqual, A0: 0, A1: 200, B0: 0, B1: 200},
		{Kind: diff.HunkInserted, A0: 200, A1: 200, B0: 200, B1: 280},
		{Kind: diff.HunkEqual, A0: 200, A1: 600, B0: 280, B1: 680},
	}
	base := &capture.BoxTree{Elements: []capture.Element{
		{Selector: "body", Y: 0, Height: 300},
		{Selector: "#a", Y: 50, Height: 20},
		{Selector: "#b", Y: 150, Height: 20},
	}}
	// Device scale 2: CSS px 100 is image row 200, the insertion point.
	got := alignedTree(base, hunks, 2)
	var short []string
	for _, e := range got.Elements {
		short = append(short, fmt.Sprintf("%s %d+%d", e.Selector, e.Y, e.Height))
	}
	if want := "body 0+340 #a 50+20 #b 190+20"; strings.Join(short, " ") != want {
		t.Errorf("aligned tree = %q, want %q", strings.Join(short, " "), want)
	}
	if base.Elements[2].Y != 150 {
		t.Errorf("the baseline's tree changed: %+v", base.Elements[2])
	}
}

// Attribution under shift: a 40 px promo inserted at y = 100 moves
// everything below it; the heading further down also changed its words and
// a clock in the shifted region ticked. The promo is added, the heading's
// text changed (not moved), the clock's change is suppressed by a
// dynamic_text rule and its pixels do not count.
func TestAlignedAttributionUnderShift(t *testing.T) {
	t.Parallel()
	a := inkedPage(300, 400, 7)
	b := insertRows(a, 100, 40, color.NRGBA{250, 200, 0, 255})
	scribble(b, image.Rect(20, 244, 120, 256)) // the heading's words
	scribble(b, image.Rect(20, 184, 60, 196))  // the clock's digits
	clock := func(y int, text string) capture.Element {
		e := el("body > span.clock", "span", 0, 20, y, 60, 20, text, "")
		e.Classes = "clock"
		return e
	}
	base := &capture.BoxTree{Elements: []capture.Element{
		el("body", "body", -1, 0, 0, 300, 400, "", "white"),
		clock(140, "10:41"),
		el("#news", "h2", 0, 10, 200, 280, 20, "News today", ""),
		el("#para", "p", 0, 10, 300, 280, 20, "Para", ""),
	}}
	cur := &capture.BoxTree{Elements: []capture.Element{
		el("body", "body", -1, 0, 0, 300, 440, "", "white"),
		el("#promo", "div", 0, 0, 100, 300, 40, "Sale", "orange"),
		clock(180, "10:42"),
		el("#news", "h2", 0, 10, 240, 280, 20, "News tonight", ""),
		el("#para", "p", 0, 10, 340, 280, 20, "Para", ""),
	}}
	res, err := diff.ComparePages(segmentsOf(a, 200), segmentsOf(b, 200), diff.PageOptions{Options: diffOptions(SuiteSpec{})})
	if err != nil {
		t.Fatal(err)
	}
	rule := &Rule{ID: "r1", Kind: RuleDynamicText, Selector: ".clock", Pattern: `\d{1,2}:\d{2}`}
	for _, rules := range [][]*Rule{nil, {rule}} {
		ex := newAlignedExplain(res, cur, newRuleSet(rules), 1)
		var got []string
		suppressed := 0
		for i, s := range res.Segments {
			if s.DiffPixels == 0 {
				continue
			}
			img, err := res.RenderSegmentDiff(i)
			if err != nil {
				t.Fatal(err)
			}
			changes, n := ex.segment(i, img, base)
			suppressed += n
			for _, c := range changes {
				line := fmt.Sprintf("%d %s %s %d,%d %s", i, c.Kind, c.Selector, c.DX, c.DY, c.SuppressedBy)
				if c.Before != nil && c.After != nil {
					line += fmt.Sprintf(" %q→%q", c.Before.Text, c.After.Text)
				}
				got = append(got, strings.Join(strings.Fields(line), " "))
			}
			if n > 0 && clusterDiff(img) != nil && len(rules) > 0 {
				// Only the heading's pixels are left in its segment; none in the clock's.
				for _, cl := range clusterDiff(img) {
					if cl.Min.Y+s.Y0 < 200 {
						t.Errorf("segment %d: a differing cluster %v is left after suppression", i, cl)
					}
				}
			}
		}
		sort.Strings(got)
		clockLine := `0 text_changed body > span.clock 0,0 "10:41"→"10:42"`
		if rules != nil {
			clockLine = `0 text_changed body > span.clock 0,0 r1 "10:41"→"10:42"`
		}
		want := []string{
			"0 added #promo 0,0",
			clockLine,
			`1 text_changed #news 0,0 "News today"→"News tonight"`,
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("rules %d: changes:\n%s\nwant:\n%s", len(rules), strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if (suppressed > 0) != (rules != nil) {
			t.Errorf("rules %d: %d differing pixels suppressed", len(rules), suppressed)
		}
	}
}

// Removed rows name the baseline's elements that were inside them, at the
// removal point; rows with no element inside are one change.
func TestAlignedRemovedAndUnnamed(t *testing.T) {
	t.Parallel()
	b := inkedPage(300, 300, 9)
	a := insertRows(b, 100, 40, color.NRGBA{250, 200, 0, 255}) // the baseline had the promo
	base := &capture.BoxTree{Elements: []capture.Element{
		el("body", "body", -1, 0, 0, 300, 340, "", "white"),
		el("#promo", "div", 0, 0, 100, 300, 40, "Sale", "orange"),
	}}
	cur := &capture.BoxTree{Elements: []capture.Element{el("body", "body", -1, 0, 0, 300, 300, "", "white")}}
	res, err := diff.ComparePages(segmentsOf(a, 200), segmentsOf(b, 200), diff.PageOptions{Options: diffOptions(SuiteSpec{})})
	if err != nil {
		t.Fatal(err)
	}
	img, err := res.RenderSegmentDiff(0)
	if err != nil {
		t.Fatal(err)
	}
	changes, _ := newAlignedExplain(res, cur, nil, 1).segment(0, img, base)
	if len(changes) != 1 || changes[0].Kind != ChangeRemoved || changes[0].Selector != "#promo" || changes[0].Box.Y != 100 ||
		changes[0].Before == nil || changes[0].Before.Box.Height != 40 {
		t.Fatalf("removed promo: %+v", changes)
	}
	// Without the element in the tree, the rows are one change.
	changes, _ = newAlignedExplain(res, cur, nil, 1).segment(0, img, &capture.BoxTree{Elements: base.Elements[:1]})
	if len(changes) != 1 || changes[0].Kind != ChangeRemoved || changes[0].Selector != "" || changes[0].Box != (Rect{Y: 100, Width: 300, Height: 1}) {
		t.Fatalf("removed rows: %+v", changes)
	}
}
