package diff

import (
	"image"
	"image/color"
	"image/draw"
	"testing"
)

// twoColumn draws a 800 px wide page: a main column of text (x < 500) and a
// sidebar (x ≥ 520) whose box at the top is boxH px tall, its text below.
func twoColumn(boxH int) *image.NRGBA {
	const w, h = 800, 1440
	page := filled(w, h, white)
	main := fixturePage(500, h, 7)
	draw.Draw(page, image.Rect(0, 0, 500, h), main, image.Point{}, draw.Src)
	draw.Draw(page, image.Rect(520, 100, 800, 100+boxH), &image.Uniform{color.NRGBA{30, 90, 200, 255}}, image.Point{}, draw.Src)
	side := fixturePage(280, 400, 8)
	draw.Draw(page, image.Rect(520, 120+boxH, 800, 520+boxH), side, image.Point{}, draw.Src)
	return page
}

// Issue 30, defect 2: on a two-column layout, a sidebar that changes height
// must not make the row alignment move the unchanged main column: the rows
// where only the sidebar differs are compared in place, every difference
// lies in the sidebar and no row counts as inserted or removed.
func TestComparePagesSidebarGrows(t *testing.T) {
	t.Parallel()
	base, cur := twoColumn(60), twoColumn(110)
	r := mustComparePages(t, base, cur, PageOptions{})
	total := 0
	for i, s := range r.Segments {
		total += s.DiffPixels
		if s.Inserted != 0 || s.Removed != 0 {
			t.Errorf("segment %d: %d rows inserted, %d removed; want none (hunks %v)", i+1, s.Inserted, s.Removed, changes(r.Hunks))
		}
		if s.DiffPixels > 0 && s.Bounds.Min.X < 520 {
			t.Errorf("segment %d: differences in %v reach the main column", i+1, s.Bounds)
		}
	}
	if total == 0 {
		t.Fatal("the grown sidebar made no difference")
	}
	// MapY keeps main-column rows in place (the attribution moves the
	// baseline's boxes through it).
	for _, y := range []int{150, 300, 600} {
		if m, _ := MapY(r.Hunks, y); m != y {
			t.Errorf("row %d maps to %d, want in place", y, m)
		}
	}
}

// A block inserted and another of the same height removed further down leave
// the shift where it was, but the content between them did move: the
// alignment stands.
func TestComparePagesInsertAndRemoveStayAligned(t *testing.T) {
	t.Parallel()
	base := fixturePage(320, 3000, 9)
	cur := withoutRows(withRows(base, 500, 40, color.NRGBA{30, 90, 200, 255}), 1540, 40)
	r := mustComparePages(t, base, cur, PageOptions{})
	ins, rem := 0, 0
	for _, s := range r.Segments {
		ins += s.Inserted
		rem += s.Removed
	}
	if ins != 40 || rem != 40 {
		t.Fatalf("%d rows inserted, %d removed (hunks %v); want 40 and 40", ins, rem, changes(r.Hunks))
	}
}
