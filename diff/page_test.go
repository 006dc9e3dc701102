package diff

import (
	"image"
	"image/color"
	"math/rand/v2"
	"slices"
	"testing"
)

// fixturePage draws a w×h page of "text": 24 px lines of random dark glyph
// pixels on white (rows 4–16 of each line), so nearly every inked row is
// unique and the gaps between lines are blank.
func fixturePage(w, h int, seed uint64) *image.NRGBA {
	rng := rand.New(rand.NewPCG(seed, seed))
	img := filled(w, h, white)
	for y := range h {
		if y%24 < 4 || y%24 >= 16 {
			continue
		}
		row := img.Pix[y*img.Stride:]
		for x := 8; x < w-8; x++ {
			if rng.IntN(4) == 0 {
				v := byte(rng.IntN(120))
				row[4*x], row[4*x+1], row[4*x+2] = v, v, v
			}
		}
	}
	return img
}

// withRows returns a copy of page with n rows of colour c inserted at y.
func withRows(page *image.NRGBA, y, n int, c color.NRGBA) *image.NRGBA {
	w, h := page.Rect.Dx(), page.Rect.Dy()
	out := image.NewNRGBA(image.Rect(0, 0, w, h+n))
	copy(out.Pix, page.Pix[:y*page.Stride])
	for yy := y; yy < y+n; yy++ {
		for x := range w {
			out.SetNRGBA(x, yy, c)
		}
	}
	copy(out.Pix[(y+n)*out.Stride:], page.Pix[y*page.Stride:])
	return out
}

// withoutRows returns a copy of page without rows y..y+n.
func withoutRows(page *image.NRGBA, y, n int) *image.NRGBA {
	w, h := page.Rect.Dx(), page.Rect.Dy()
	out := image.NewNRGBA(image.Rect(0, 0, w, h-n))
	copy(out.Pix, page.Pix[:y*page.Stride])
	copy(out.Pix[y*out.Stride:], page.Pix[(y+n)*page.Stride:])
	return out
}

// segmentsOf cuts a page into segments of height seg (the last one shorter).
func segmentsOf(page *image.NRGBA, seg int) []image.Image {
	var out []image.Image
	for y := 0; y < page.Rect.Dy(); y += seg {
		out = append(out, page.SubImage(image.Rect(0, y, page.Rect.Dx(), min(y+seg, page.Rect.Dy()))))
	}
	return out
}

func changes(hs []Hunk) []Hunk {
	return slices.DeleteFunc(slices.Clone(hs), func(h Hunk) bool { return h.Kind == HunkEqual })
}

func mustComparePages(t *testing.T, a, b *image.NRGBA, o PageOptions) *PageResult {
	t.Helper()
	r, err := ComparePages(segmentsOf(a, 720), segmentsOf(b, 720), o)
	if err != nil {
		t.Fatalf("ComparePages: %v", err)
	}
	return r
}

// pixelFails compares the pages segment by segment, top-anchored (today's
// pixel mode), and returns the indexes of the segments that differ.
func pixelFails(t *testing.T, a, b *image.NRGBA) []int {
	t.Helper()
	sa, sb := segmentsOf(a, 720), segmentsOf(b, 720)
	var failed []int
	for i := range min(len(sa), len(sb)) {
		if r := mustCompare(t, sa[i], sb[i], Options{}); r.DiffPixels > 0 || r.SizeMismatch {
			failed = append(failed, i)
		}
	}
	return failed
}

// The proof: a 25,000 px page, a 37 px block inserted at y = 500.
func TestComparePagesInsertedBlock(t *testing.T) {
	t.Parallel()
	base := fixturePage(320, 25000, 1)
	cur := withRows(base, 500, 37, color.NRGBA{30, 90, 200, 255})
	r := mustComparePages(t, base, cur, PageOptions{})
	if got, want := changes(r.Hunks), []Hunk{{HunkInserted, 500, 500, 500, 537}}; !slices.Equal(got, want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	if len(r.Segments) != 35 {
		t.Fatalf("%d segments, want 35", len(r.Segments))
	}
	s0 := r.Segments[0]
	if s0.DiffPixels != 37*320 || s0.Inserted != 37 || s0.Bounds != image.Rect(0, 500, 320, 537) {
		t.Fatalf("segment 1: %+v, want the 37 inserted rows alone", s0)
	}
	for i, s := range r.Segments[1:] {
		if s.DiffPixels != 0 || s.Shift != 37 {
			t.Fatalf("segment %d: %d px differ, shift %d; want 0 and 37", i+2, s.DiffPixels, s.Shift)
		}
	}
	// Pixel mode fails the segment with the block and every one below it.
	if got := pixelFails(t, base, cur); len(got) != 35 {
		t.Fatalf("pixel mode fails %d segments (%v), want all 35", len(got), got)
	}
	img := r.SegmentDiff(0)
	if p := img.NRGBAAt(100, 510); p.G <= p.R || p.G <= p.B {
		t.Fatalf("inserted band pixel %v is not tinted green", p)
	}
}

func TestComparePagesRemovedBlock(t *testing.T) {
	t.Parallel()
	base := fixturePage(320, 25000, 2)
	// Rows 1012 and 1062 are inked (a removal between blank rows could be
	// placed anywhere among them: any place is a right answer).
	cur := withoutRows(base, 1012, 50)
	r := mustComparePages(t, base, cur, PageOptions{})
	if got, want := changes(r.Hunks), []Hunk{{HunkRemoved, 1012, 1062, 1012, 1012}}; !slices.Equal(got, want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	if s := r.Segments[1]; s.Removed != 50 || s.DiffPixels != 50*320 {
		t.Fatalf("segment 2: %+v, want 50 removed rows", s)
	}
	for i, s := range r.Segments[2:] {
		if s.DiffPixels != 0 || s.Shift != -50 {
			t.Fatalf("segment %d: %d px differ, shift %d; want 0 and -50", i+3, s.DiffPixels, s.Shift)
		}
	}
	if m := r.SegmentsA[1]; m.Removed != 50 {
		t.Fatalf("baseline segment 2: %+v, want 50 removed rows", m)
	}
	if p := r.SegmentDiff(1).NRGBAAt(10, 1012-720); p != (color.NRGBA{200, 0, 200, 255}) {
		t.Fatalf("removal marker pixel %v", p)
	}
}

// A word changed far below an insertion is found, in its segment alone,
// including a change too faint for the row signatures (inside an equal hunk).
func TestComparePagesChangeInShiftedRegion(t *testing.T) {
	t.Parallel()
	base := fixturePage(320, 25000, 3)
	cur := withRows(base, 500, 37, color.NRGBA{30, 90, 200, 255})
	word := image.Rect(100, 10000+4, 160, 10000+16) // a piece of one line, in the second page
	for y := word.Min.Y; y < word.Max.Y; y++ {
		for x := word.Min.X; x < word.Max.X; x++ {
			cur.SetNRGBA(x, y, color.NRGBA{200, 30, 30, 255})
		}
	}
	faint := image.Pt(50, 20000+6) // one pixel 3 levels lighter: same signature
	p := cur.NRGBAAt(faint.X, faint.Y)
	p.R, p.G, p.B = 253, 253, 253
	cur.SetNRGBA(faint.X, faint.Y, p)
	r := mustComparePages(t, base, cur, PageOptions{Options: Options{Threshold: ExactThreshold}})
	var failed []int
	for i, s := range r.Segments {
		if s.DiffPixels > 0 {
			failed = append(failed, i)
		}
	}
	wantSeg, faintSeg := 10000/720, 20000/720
	if !slices.Equal(failed, []int{0, wantSeg, faintSeg}) {
		t.Fatalf("segments with differences %v, want [0 %d %d]", failed, wantSeg, faintSeg)
	}
	s := r.Segments[wantSeg]
	if got := s.Bounds.Add(image.Pt(0, s.Y0)); !got.Eq(word) && !word.In(got) {
		t.Fatalf("change bounds %v, want about %v", got, word)
	}
	if s.Shift != 37 {
		t.Fatalf("changed segment shift %d, want 37", s.Shift)
	}
	if f := r.Segments[faintSeg]; f.DiffPixels != 1 {
		t.Fatalf("faint change: %d px, want 1", f.DiffPixels)
	}
}

// An ignore rectangle on the baseline's segment 8 follows its content when
// everything above moves down 120 px.
func TestComparePagesMaskFollowsContent(t *testing.T) {
	t.Parallel()
	base := fixturePage(320, 8000, 4)
	cur := withRows(base, 300, 120, color.NRGBA{250, 200, 0, 255})
	clock := image.Rect(20, 7*720+100, 120, 7*720+112) // baseline page coordinates
	for y := clock.Min.Y + 120; y < clock.Max.Y+120; y++ {
		for x := clock.Min.X; x < clock.Max.X; x++ {
			cur.SetNRGBA(x, y, black)
		}
	}
	r := mustComparePages(t, base, cur, PageOptions{})
	if s := r.Segments[7]; s.DiffPixels == 0 {
		t.Fatal("without the mask the changed clock must count")
	}
	r = mustComparePages(t, base, cur, PageOptions{MaskA: []image.Rectangle{clock}})
	for i, s := range r.Segments[1:] {
		if s.DiffPixels != 0 || s.Shift != 120 {
			t.Fatalf("segment %d: %d px differ, shift %d; want 0 and 120", i+2, s.DiffPixels, s.Shift)
		}
	}
	if r.Segments[7].MaskedPixels == 0 {
		t.Fatal("the mask covered nothing in segment 8")
	}
}

func TestComparePagesWidths(t *testing.T) {
	t.Parallel()
	_, err := ComparePages([]image.Image{filled(10, 10, white)}, []image.Image{filled(12, 10, white)}, PageOptions{})
	if err == nil {
		t.Fatal("pages of different widths must not compare")
	}
	r, err := ComparePages(nil, []image.Image{filled(10, 10, white)}, PageOptions{})
	if err != nil || len(r.Segments) != 1 || r.Segments[0].Inserted != 10 {
		t.Fatalf("empty baseline: %+v, %v", r, err)
	}
}

// Pages cut at a maximum height: content pushed past the cut by an
// insertion is not reported as removed.
func TestComparePagesOpenEnded(t *testing.T) {
	t.Parallel()
	page := fixturePage(320, 3000, 5)
	base := withoutRows(page, 2880, 120) // the first 2,880 rows
	cur := withoutRows(withRows(page, 300, 40, color.NRGBA{30, 90, 200, 255}), 2880, 160)
	r := mustComparePages(t, base, cur, PageOptions{})
	if got := changes(r.Hunks); len(got) != 2 || got[1].Kind != HunkRemoved {
		t.Fatalf("closed: changes %v, want the insertion and a removal at the end", got)
	}
	r = mustComparePages(t, base, cur, PageOptions{OpenEnded: true})
	if got, want := changes(r.Hunks), []Hunk{{HunkInserted, 300, 300, 300, 340}}; !slices.Equal(got, want) {
		t.Fatalf("open-ended: changes %v, want %v", got, want)
	}
	for i, s := range r.Segments[1:] {
		if s.DiffPixels != 0 {
			t.Fatalf("segment %d: %+v", i+2, s)
		}
	}
}
