package regression

import (
	"image"
	"image/color"
	"image/draw"
	"testing"
	"time"

	"github.com/snapq/snapq/diff"
)

// page draws a w×h page: a light background, per-page content at contentX
// (a box that differs from page to page) and a header box of colour hdr.
func page(w, h int, hdr color.NRGBA, content int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), &image.Uniform{color.NRGBA{250, 250, 250, 255}}, image.Point{}, draw.Src)
	draw.Draw(img, image.Rect(10, 10, 130, 40), &image.Uniform{hdr}, image.Point{}, draw.Src)
	draw.Draw(img, image.Rect(10, 60, 20+content*7, 80), &image.Uniform{color.NRGBA{30, 30, 30, 255}}, image.Point{}, draw.Src)
	return img
}

func keyOf(t *testing.T, base, cur image.Image, mask ...image.Rectangle) string {
	t.Helper()
	opts := diff.DefaultOptions()
	opts.Mask = mask
	res, err := diff.Compare(base, cur, opts)
	if err != nil {
		t.Fatal(err)
	}
	return GroupKey(res.Diff, cur, base)
}

func TestGroupKey(t *testing.T) {
	t.Parallel()
	blue, red, green := color.NRGBA{30, 80, 200, 255}, color.NRGBA{200, 40, 20, 255}, color.NRGBA{20, 160, 40, 255}
	headerChange := keyOf(t, page(320, 200, blue, 1), page(320, 200, red, 1))
	if headerChange == "" {
		t.Fatal("a header change has no key")
	}
	tests := []struct {
		name      string
		base, cur image.Image
		mask      []image.Rectangle
		same      bool // the key is headerChange's
		empty     bool
	}{
		{name: "another page, same header change", base: page(320, 200, blue, 5), cur: page(320, 200, red, 5), same: true},
		{name: "a wider viewport, same header change", base: page(400, 200, blue, 3), cur: page(400, 200, red, 3), same: true},
		{name: "a taller segment, same header change", base: page(320, 700, blue, 2), cur: page(320, 700, red, 2), same: true},
		{name: "a masked change elsewhere does not count", base: page(320, 200, blue, 1), cur: func() image.Image {
			img := page(320, 200, red, 1)
			draw.Draw(img, image.Rect(200, 150, 220, 170), &image.Uniform{green}, image.Point{}, draw.Src)
			return img
		}(), mask: []image.Rectangle{image.Rect(190, 140, 230, 180)}, same: true},
		{name: "another new colour", base: page(320, 200, blue, 1), cur: page(320, 200, green, 1)},
		{name: "another old colour", base: page(320, 200, green, 1), cur: page(320, 200, red, 1)},
		{name: "the same change plus another", base: page(320, 200, blue, 1), cur: func() image.Image {
			img := page(320, 200, red, 1)
			draw.Draw(img, image.Rect(200, 150, 220, 170), &image.Uniform{green}, image.Point{}, draw.Src)
			return img
		}()},
		{name: "the header moved", base: func() image.Image {
			img := page(320, 200, blue, 1)
			draw.Draw(img, image.Rect(10, 10, 130, 40), &image.Uniform{color.NRGBA{250, 250, 250, 255}}, image.Point{}, draw.Src)
			draw.Draw(img, image.Rect(12, 10, 132, 40), &image.Uniform{blue}, image.Point{}, draw.Src)
			return img
		}(), cur: func() image.Image {
			img := page(320, 200, red, 1)
			draw.Draw(img, image.Rect(10, 10, 130, 40), &image.Uniform{color.NRGBA{250, 250, 250, 255}}, image.Point{}, draw.Src)
			draw.Draw(img, image.Rect(12, 10, 132, 40), &image.Uniform{red}, image.Point{}, draw.Src)
			return img
		}()},
		{name: "no change", base: page(320, 200, blue, 1), cur: page(320, 200, blue, 1), empty: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := keyOf(t, tc.base, tc.cur, tc.mask...)
			switch {
			case tc.empty && got != "":
				t.Fatalf("key %q, want none", got)
			case tc.empty:
			case tc.same && got != headerChange:
				t.Fatalf("key %q, want the header change's %q", got, headerChange)
			case !tc.same && (got == headerChange || got == ""):
				t.Fatalf("key %q, want a key of its own", got)
			}
		})
	}
}

func TestChangeBoxes(t *testing.T) {
	t.Parallel()
	d := image.NewNRGBA(image.Rect(0, 0, 200, 100))
	draw.Draw(d, d.Bounds(), &image.Uniform{color.NRGBA{240, 240, 240, 255}}, image.Point{}, draw.Src)
	mark := func(r image.Rectangle) {
		draw.Draw(d, r, &image.Uniform{color.NRGBA{255, 0, 0, 255}}, image.Point{}, draw.Src)
	}
	mark(image.Rect(5, 5, 20, 12))     // one cluster …
	mark(image.Rect(30, 8, 40, 10))    // … touching cells: the same cluster
	mark(image.Rect(150, 70, 160, 90)) // far away: another
	// Anti-aliasing (yellow) and masked (blue) pixels are not changes.
	draw.Draw(d, image.Rect(100, 40, 110, 50), &image.Uniform{color.NRGBA{255, 255, 0, 255}}, image.Point{}, draw.Src)
	draw.Draw(d, image.Rect(100, 0, 110, 10), &image.Uniform{color.NRGBA{0, 96, 255, 255}}, image.Point{}, draw.Src)
	got := ChangeBoxes(d)
	want := []image.Rectangle{image.Rect(5, 5, 40, 12), image.Rect(150, 70, 160, 90)}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("boxes %v, want %v", got, want)
	}
}

func TestGroups(t *testing.T) {
	t.Parallel()
	now := time.Now()
	cs := []*Comparison{
		{ID: "a", GroupKey: "k1", Status: ComparePassed},
		{ID: "b", GroupKey: "k2", Status: CompareFailed},
		{ID: "c", GroupKey: "k1", Status: CompareFailed},
		{ID: "d", Status: ComparePassed},
		{ID: "e", GroupKey: "k1", Status: CompareFailed, ApprovedAt: &now},
		{ID: "f", GroupKey: "k1", Status: CompareFailed, RejectedAt: &now},
	}
	gs := Groups(cs)
	if len(gs) != 2 || gs[0].Key != "k1" || len(gs[0].Comparisons) != 4 || gs[1].Key != "k2" {
		t.Fatalf("groups %+v", gs)
	}
	g := gs[0]
	if g.Comparisons[0].ID != "c" { // the first member that needs review represents the group
		t.Fatalf("representative %s, want c", g.Comparisons[0].ID)
	}
	if want := (GroupCounts{Passed: 1, Failed: 3, Approved: 1, Rejected: 1}); g.Counts != want {
		t.Fatalf("counts %+v, want %+v", g.Counts, want)
	}
	if ids := g.Reviewable(); len(ids) != 2 || ids[0] != "c" || ids[1] != "f" {
		t.Fatalf("reviewable %v, want [c f]", ids)
	}
}

// BenchmarkGroupKey keys a 1280×720 segment whose header band (1280×120)
// changed: what every failed comparison pays on top of the diff.
func BenchmarkGroupKey(b *testing.B) {
	base := page(1280, 720, color.NRGBA{30, 80, 200, 255}, 1)
	cur := page(1280, 720, color.NRGBA{200, 40, 20, 255}, 1)
	draw.Draw(cur, image.Rect(0, 0, 1280, 120), &image.Uniform{color.NRGBA{200, 40, 20, 255}}, image.Point{}, draw.Src)
	res, err := diff.Compare(base, cur, diff.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if GroupKey(res.Diff, cur, base) == "" {
			b.Fatal("no key")
		}
	}
}
