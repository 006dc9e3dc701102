package capture

import "math"

// Rect is a horizontal band of the page in CSS pixels: it starts Y pixels from the top of the
// document and is Height pixels tall. Bands always span the viewport's width.
type Rect struct {
	Y      int
	Height int
}

// Plan says how a page is cut into segments.
type Plan struct {
	Total     int    // pieces the whole page needs
	Captured  int    // pieces that will be captured: min(Total, max segments)
	Truncated bool   // Captured < Total
	Rects     []Rect // the Captured pieces, top to bottom
}

// PlanSegments cuts a page of pageHeight CSS pixels into viewport-height pieces, keeping at
// most maxSegments of them (normalized like NormalizeMaxSegments: < 1 means the default,
// more than HardMaxSegments means HardMaxSegments).
//
// Every piece is viewportHeight tall except the last, which is only the remainder. A page no
// taller than the viewport (including a page that reports height 0) gives one piece of the full
// viewport height, like a screenshot of the screen. A page of exactly N viewports gives N
// pieces; one pixel more gives N+1, the last 1 pixel tall. A viewportHeight below 1 is treated
// as 1. Only the captured pieces are allocated, so huge heights cost nothing.
func PlanSegments(pageHeight, viewportHeight, maxSegments int) Plan {
	if viewportHeight < 1 {
		viewportHeight = 1
	}
	if maxSegments < 1 {
		maxSegments = DefaultMaxSegments
	}
	if maxSegments > HardMaxSegments {
		maxSegments = HardMaxSegments
	}
	if pageHeight <= viewportHeight {
		return Plan{Total: 1, Captured: 1, Rects: []Rect{{Y: 0, Height: viewportHeight}}}
	}

	// ceil without pageHeight+viewportHeight-1, which could overflow.
	total := pageHeight / viewportHeight
	if pageHeight%viewportHeight != 0 {
		total++
	}
	captured := min(total, maxSegments)
	rects := make([]Rect, captured)
	for i := range rects {
		y := i * viewportHeight // i < HardMaxSegments and y < pageHeight: no overflow
		rects[i] = Rect{Y: y, Height: min(viewportHeight, pageHeight-y)}
	}
	return Plan{Total: total, Captured: captured, Truncated: captured < total, Rects: rects}
}

// NormalizeMaxSegments turns a client-supplied max_segments into a usable cap: NaN, ±Inf and
// values below 1 (after flooring) give DefaultMaxSegments; values above HardMaxSegments give
// HardMaxSegments; fractions are floored.
func NormalizeMaxSegments(v float64) int {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return DefaultMaxSegments
	}
	v = math.Floor(v)
	switch {
	case v < 1:
		return DefaultMaxSegments
	case v > HardMaxSegments:
		return HardMaxSegments
	}
	return int(v)
}

// Keep is the plan with only its first n pieces captured (n < Captured): the rest are left
// out like pieces past max_segments, so Truncated is set and Total stays the whole page's.
func (p Plan) Keep(n int) Plan {
	if n >= p.Captured {
		return p
	}
	return Plan{Total: p.Total, Captured: n, Truncated: true, Rects: p.Rects[:n]}
}
