package diff

import (
	"errors"
	"fmt"
	"image"
)

// ErrWidthMismatch is returned by ComparePages when the segments of the two
// pages are not all of one width: rows cannot be matched across widths
// (compare such pages segment by segment instead).
var ErrWidthMismatch = errors.New("diff: pages of different widths")

// Colours of the bands of a page diff image.
var (
	insertRGB = [3]byte{0, 160, 0}   // rows only the second page has (blended over them)
	removeRGB = [3]byte{200, 0, 200} // the line where rows of the first page were removed
)

// removedMarker is the height of the line marking removed rows.
const removedMarker = 3

// PageOptions tunes ComparePages.
type PageOptions struct {
	// Threshold and IncludeAA as in Options; Options.Mask and DiffImage are
	// not used (see MaskA, MaskB and PageResult.SegmentDiff).
	Options
	// MaskA lists regions of the first page (page coordinates, all its
	// segments stacked) that are neither compared nor counted: they follow
	// their content through the alignment, wherever it moved in the second.
	MaskA []image.Rectangle
	// MaskB lists regions of the second page, likewise.
	MaskB []image.Rectangle
	// MaxEdits bounds the alignment (0: DefaultMaxEdits).
	MaxEdits int
	// OpenEnded says the pages were cut at a maximum height (a capped
	// segment count): a hunk that reaches the end of both pages is what the
	// cut let in or out, not a change, and is left out.
	OpenEnded bool
}

// SegmentResult is the part of a page comparison that falls in one segment
// of the second page.
type SegmentResult struct {
	// Y0, Y1 are the segment's rows in the second page.
	Y0, Y1 int
	// DiffPixels counts differing pixels: those the pixel diff finds in
	// rows paired with the first page, every unmasked pixel of inserted
	// rows, and every unmasked pixel of rows removed where this segment now
	// holds the removal point.
	DiffPixels, AAPixels, MaskedPixels int
	// Ratio is DiffPixels / the segment's area, at most 1.
	Ratio float64
	// Shift is how far the segment's content moved down since the first
	// page (negative: up): the offset of the most rows of equal hunks in it.
	Shift int
	// Inserted and Removed count the rows inserted in the segment and the
	// rows removed at a point in it.
	Inserted, Removed int
	// Bounds is the smallest rectangle of the segment holding every
	// difference; empty when there is none.
	Bounds image.Rectangle
	// From is the index of the segment of the first page most of its paired
	// rows (equal or changed) come from; -1 when none is paired.
	From int
}

// SegmentMatch says where the content of one segment of the first page went.
type SegmentMatch struct {
	// Y0, Y1 are the segment's rows in the first page.
	Y0, Y1 int
	// Removed counts its rows that the second page no longer has.
	Removed int
	// Shift is the offset of the most of its rows that are in equal hunks.
	Shift int
	// Segment is the index of the segment of the second page holding most
	// of its rows paired (equal or changed); -1 when none is.
	Segment int
}

// PageResult is the outcome of ComparePages.
type PageResult struct {
	// Width is the pages' width; HeightA and HeightB their heights.
	Width, HeightA, HeightB int
	// Hunks cover both pages top to bottom.
	Hunks []Hunk
	// Segments has one result per segment of the second page.
	Segments []SegmentResult
	// SegmentsA has one match per segment of the first page.
	SegmentsA []SegmentMatch

	a, b   []raster
	offA   []int // first row of each segment in its page, then the height
	offB   []int
	pieces []piece
	opts   PageOptions
}

// piece is a part of a hunk inside one segment of each page.
type piece struct {
	kind       HunkKind // equal and changed: paired rows; inserted; removed
	a, b, n    int      // page rows a..a+n paired with b..b+n (removed: at b)
	segA, segB int
}

// ComparePages compares two tall pages given as their segments, top to
// bottom (a baseline and a current capture of a `segments` screenshot): it
// aligns the pages' rows (RowSignatures, Align), so content that moved is
// compared with itself, runs the pixel diff in every pair of rows (equal
// hunks, to catch changes below the signature's quantisation, and changed
// hunks, top-anchored), counts inserted and removed rows as differences, and
// reports the outcome per segment of the second page.
func ComparePages(a, b []image.Image, opts PageOptions) (*PageResult, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	r := &PageResult{opts: opts, Width: -1}
	var sigA, sigB []uint64
	var err error
	if r.a, r.offA, sigA, err = r.load(a); err != nil {
		return nil, err
	}
	if r.b, r.offB, sigB, err = r.load(b); err != nil {
		return nil, err
	}
	r.Width = max(r.Width, 0)
	r.HeightA, r.HeightB = r.offA[len(r.a)], r.offB[len(r.b)]
	r.Hunks = Align(sigA, sigB, opts.MaxEdits)
	if n := len(r.Hunks); opts.OpenEnded && n > 0 {
		if h := r.Hunks[n-1]; h.Kind != HunkEqual && h.A1 == r.HeightA && h.B1 == r.HeightB {
			r.Hunks = r.Hunks[:n-1]
		}
	}
	r.cut()
	r.count()
	return r, nil
}

// load reads one page's segments and their row signatures; every segment of
// both pages must have r.Width.
func (r *PageResult) load(imgs []image.Image) ([]raster, []int, []uint64, error) {
	rs := make([]raster, len(imgs))
	off := make([]int, len(imgs)+1)
	var sigs []uint64
	for i, img := range imgs {
		if img == nil {
			return nil, nil, nil, ErrNilImage
		}
		sz := img.Bounds().Size()
		if int64(sz.X)*int64(sz.Y) > MaxPixels {
			return nil, nil, nil, fmt.Errorf("%w: %d×%d segment exceeds %d pixels", ErrTooLarge, sz.X, sz.Y, MaxPixels)
		}
		if r.Width >= 0 && sz.X != r.Width {
			return nil, nil, nil, fmt.Errorf("%w: %d and %d px", ErrWidthMismatch, r.Width, sz.X)
		}
		r.Width = sz.X
		rs[i] = toRaster(img)
		off[i+1] = off[i] + sz.Y
		sigs = append(sigs, signatures(rs[i])...)
	}
	return rs, off, sigs, nil
}

// segAt is the index of the segment holding row y (the last one for y at
// or past the end; -1 for a page without rows).
func segAt(off []int, y int) int {
	for i := len(off) - 2; i >= 0; i-- {
		if y >= off[i] && off[i+1] > off[i] {
			return i
		}
	}
	if len(off) > 1 && off[len(off)-1] > 0 {
		return 0
	}
	return -1
}

// cut splits the hunks into pieces that each lie in one segment of each page.
func (r *PageResult) cut() {
	pair := func(kind HunkKind, a, b, n int) {
		for n > 0 {
			sa, sb := segAt(r.offA, a), segAt(r.offB, b)
			l := min(n, r.offA[sa+1]-a, r.offB[sb+1]-b)
			r.pieces = append(r.pieces, piece{kind: kind, a: a, b: b, n: l, segA: sa, segB: sb})
			a, b, n = a+l, b+l, n-l
		}
	}
	inserted := func(b, n int) {
		for n > 0 {
			sb := segAt(r.offB, b)
			l := min(n, r.offB[sb+1]-b)
			r.pieces = append(r.pieces, piece{kind: HunkInserted, a: -1, b: b, n: l, segA: -1, segB: sb})
			b, n = b+l, n-l
		}
	}
	removed := func(a, b, n int) {
		for n > 0 {
			sa := segAt(r.offA, a)
			l := min(n, r.offA[sa+1]-a)
			r.pieces = append(r.pieces, piece{kind: HunkRemoved, a: a, b: b, n: l, segA: sa, segB: segAt(r.offB, b)})
			a, n = a+l, n-l
		}
	}
	for _, h := range r.Hunks {
		la, lb := h.A1-h.A0, h.B1-h.B0
		switch h.Kind {
		case HunkEqual:
			pair(HunkEqual, h.A0, h.B0, la)
		case HunkInserted:
			inserted(h.B0, lb)
		case HunkRemoved:
			removed(h.A0, h.B0, la)
		case HunkChanged:
			n := min(la, lb)
			pair(HunkChanged, h.A0, h.B0, n)
			inserted(h.B0+n, lb-n)
			removed(h.A0+n, h.B0+n, la-n)
		}
	}
}

// count runs the pixel diff over every piece and sums up per segment.
func (r *PageResult) count() {
	r.Segments = make([]SegmentResult, len(r.b))
	for i := range r.Segments {
		r.Segments[i].Y0, r.Segments[i].Y1 = r.offB[i], r.offB[i+1]
	}
	r.SegmentsA = make([]SegmentMatch, len(r.a))
	for i := range r.SegmentsA {
		r.SegmentsA[i].Y0, r.SegmentsA[i].Y1 = r.offA[i], r.offA[i+1]
	}
	shiftsB := make([]map[int]int, len(r.b))
	shiftsA := make([]map[int]int, len(r.a))
	pairedA := make([]map[int]int, len(r.a))
	pairedB := make([]map[int]int, len(r.b))
	tally := func(ms []map[int]int, i, key, n int) {
		if ms[i] == nil {
			ms[i] = map[int]int{}
		}
		ms[i][key] += n
	}
	bounds := make([]image.Rectangle, len(r.b))
	for _, p := range r.pieces {
		if p.segB < 0 {
			// The second page is empty: removed rows are counted nowhere.
			r.SegmentsA[p.segA].Removed += p.n
			continue
		}
		s := &r.Segments[p.segB]
		top := r.offB[p.segB]
		var d, aa, masked int
		var box image.Rectangle
		switch p.kind {
		case HunkEqual, HunkChanged:
			res := r.comparePiece(p, false)
			d, aa, masked = res.DiffPixels, res.AAPixels, res.MaskedPixels
			box = res.Bounds.Add(image.Pt(0, p.b-top))
			tally(pairedA, p.segA, p.segB, p.n)
			tally(pairedB, p.segB, p.segA, p.n)
			if p.kind == HunkEqual {
				tally(shiftsB, p.segB, p.b-p.a, p.n)
				tally(shiftsA, p.segA, p.b-p.a, p.n)
			}
		case HunkInserted:
			masked = maskedIn(r.opts.MaskB, p.b, p.n, r.Width)
			d = r.Width*p.n - masked
			box = image.Rect(0, p.b-top, r.Width, p.b-top+p.n)
			s.Inserted += p.n
		case HunkRemoved:
			m := maskedIn(r.opts.MaskA, p.a, p.n, r.Width)
			d = r.Width*p.n - m
			y := min(p.b-top, s.Y1-s.Y0-1)
			box = image.Rect(0, y, r.Width, y+1)
			s.Removed += p.n
			r.SegmentsA[p.segA].Removed += p.n
		}
		s.DiffPixels += d
		s.AAPixels += aa
		s.MaskedPixels += masked
		if d > 0 {
			bounds[p.segB] = bounds[p.segB].Union(box)
		}
	}
	for i := range r.Segments {
		s := &r.Segments[i]
		s.Shift = mostRows(shiftsB[i], 0)
		s.From = mostRows(pairedB[i], -1)
		s.Bounds = bounds[i]
		if area := r.Width * (s.Y1 - s.Y0); area > 0 {
			s.Ratio = min(1, float64(s.DiffPixels)/float64(area))
		} else if s.DiffPixels > 0 {
			s.Ratio = 1
		}
	}
	for i := range r.SegmentsA {
		r.SegmentsA[i].Shift = mostRows(shiftsA[i], 0)
		r.SegmentsA[i].Segment = mostRows(pairedA[i], -1)
	}
}

// mostRows is the key with the most rows (the smallest key on a tie), or
// none for an empty tally.
func mostRows(m map[int]int, none int) int {
	best, rows := none, 0
	for k, n := range m {
		if n > rows || (n == rows && k < best) {
			best, rows = k, n
		}
	}
	return best
}

// maskedIn counts the pixels of rows y..y+n (width w) that masks cover.
func maskedIn(masks []image.Rectangle, y, n, w int) int {
	if len(masks) == 0 {
		return 0
	}
	band := image.Rect(0, y, w, y+n)
	rowMask := make([]bool, w)
	count := 0
	for yy := y; yy < y+n; yy++ {
		clear(rowMask)
		hit := false
		for _, m := range masks {
			if m = m.Intersect(band); !m.Empty() && yy >= m.Min.Y && yy < m.Max.Y {
				hit = true
				for x := m.Min.X; x < m.Max.X; x++ {
					rowMask[x] = true
				}
			}
		}
		if hit {
			for _, v := range rowMask {
				if v {
					count++
				}
			}
		}
	}
	return count
}

// comparePiece runs the pixel diff over a piece of paired rows, the masks of
// both pages moved into the piece's coordinates.
func (r *PageResult) comparePiece(p piece, withImage bool) *Result {
	ra, rb := r.a[p.segA], r.b[p.segB]
	ya, yb := p.a-r.offA[p.segA], p.b-r.offB[p.segB]
	va := raster{pix: ra.pix[ya*ra.stride:], stride: ra.stride, w: ra.w, h: p.n}
	vb := raster{pix: rb.pix[yb*rb.stride:], stride: rb.stride, w: rb.w, h: p.n}
	o := r.opts.Options
	o.DiffImage = withImage
	o.Mask = nil
	for _, m := range r.opts.MaskA {
		o.Mask = append(o.Mask, m.Sub(pt(0, p.a)))
	}
	for _, m := range r.opts.MaskB {
		o.Mask = append(o.Mask, m.Sub(pt(0, p.b)))
	}
	return compareRasters(va, vb, o)
}

func pt(x, y int) image.Point { return image.Point{X: x, Y: y} }

// SegmentDiff renders the diff image of segment i of the second page: the
// pixel diff's colours where rows are paired, inserted rows tinted green,
// and a magenta line where rows were removed. It costs one pixel diff of
// the segment, so callers render only the segments they keep.
func (r *PageResult) SegmentDiff(i int) *image.NRGBA {
	s := r.Segments[i]
	h := s.Y1 - s.Y0
	out := image.NewNRGBA(image.Rect(0, 0, r.Width, h))
	var removedAt []int
	c := &comparer{grayKey: 0xffffffff}
	for _, p := range r.pieces {
		if p.segB != i {
			continue
		}
		y := p.b - s.Y0
		switch p.kind {
		case HunkEqual, HunkChanged:
			res := r.comparePiece(p, true)
			copy(out.Pix[y*out.Stride:(y+p.n)*out.Stride], res.Diff.Pix)
		case HunkInserted:
			rb := r.b[i]
			for k := range p.n {
				dst := out.Pix[(y+k)*out.Stride : (y+k)*out.Stride+4*r.Width]
				c.fadeRow(rb.row(y+k), dst)
				for x := 0; x < len(dst); x += 4 {
					dst[x] = byte((int(dst[x]) + int(insertRGB[0])) / 2)
					dst[x+1] = byte((int(dst[x+1]) + int(insertRGB[1])) / 2)
					dst[x+2] = byte((int(dst[x+2]) + int(insertRGB[2])) / 2)
				}
			}
		case HunkRemoved:
			removedAt = append(removedAt, y)
		}
	}
	for _, y := range removedAt {
		y0 := max(0, min(y-1, h-removedMarker))
		for yy := y0; yy < min(h, y0+removedMarker); yy++ {
			row := out.Pix[yy*out.Stride:]
			for x := range r.Width {
				paint(row, 4*x, removeRGB)
			}
		}
	}
	return out
}
