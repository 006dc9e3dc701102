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

	a, b   []raster // decoded segments (zero: not decoded yet)
	srcA   []PageSegment
	srcB   []PageSegment
	offA   []int // first row of each segment in its page, then the height
	offB   []int
	pieces []piece
	opts   PageOptions
	// decoded counts the segments of either page decoded; err is the first
	// decoding error.
	decoded int
	err     error
}

// PageSegment is one segment of a page known by its manifest (the row
// hashes its capture recorded), decoded only when the comparison needs its
// pixels (ComparePageSegments).
type PageSegment struct {
	// Width and Height are the segment's size in px.
	Width, Height int
	// Sigs has the RowSignature of every row; Exact, when not nil, the
	// RowExact of every row.
	Sigs, Exact []uint64
	// Load decodes the segment (called at most once); its size must be
	// Width×Height.
	Load func() (image.Image, error)
}

// Decoded is how many segments of the two pages were decoded.
func (r *PageResult) Decoded() int { return r.decoded }

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
	r.decoded = len(a) + len(b)
	return r.compare(sigA, sigB)
}

// ComparePageSegments is ComparePages on pages known by their segments'
// manifests: the rows are aligned by the recorded signatures, without
// decoding an image, and a segment is decoded only when its pixels are
// needed: paired rows whose exact hashes differ (a changed hunk, or an
// equal one that may differ below the signature's quantisation), or rows
// without exact hashes. Paired rows with the same exact hashes have the
// same bytes and no difference; inserted and removed rows are counted from
// their size. Errors are ComparePages', ErrRowHashes for a segment whose
// hashes do not have one entry per row, and a Load error.
func ComparePageSegments(a, b []PageSegment, opts PageOptions) (*PageResult, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	r := &PageResult{opts: opts, Width: -1, srcA: a, srcB: b}
	var sigA, sigB []uint64
	var err error
	if r.offA, sigA, err = r.manifest(a); err != nil {
		return nil, err
	}
	if r.offB, sigB, err = r.manifest(b); err != nil {
		return nil, err
	}
	r.a, r.b = make([]raster, len(a)), make([]raster, len(b))
	res, err := r.compare(sigA, sigB)
	if err == nil && r.err != nil {
		return nil, r.err
	}
	return res, err
}

// manifest checks one page's segments and joins their signatures.
func (r *PageResult) manifest(segs []PageSegment) ([]int, []uint64, error) {
	off := make([]int, len(segs)+1)
	var sigs []uint64
	for i, s := range segs {
		if int64(s.Width)*int64(s.Height) > MaxPixels || s.Width < 0 || s.Height < 0 {
			return nil, nil, fmt.Errorf("%w: %d×%d segment exceeds %d pixels", ErrTooLarge, s.Width, s.Height, MaxPixels)
		}
		if r.Width >= 0 && s.Width != r.Width {
			return nil, nil, fmt.Errorf("%w: %d and %d px", ErrWidthMismatch, r.Width, s.Width)
		}
		if len(s.Sigs) != s.Height || (s.Exact != nil && len(s.Exact) != s.Height) {
			return nil, nil, fmt.Errorf("%w: segment %d has %d rows, %d signatures", ErrRowHashes, i, s.Height, len(s.Sigs))
		}
		r.Width = s.Width
		off[i+1] = off[i] + s.Height
		sigs = append(sigs, s.Sigs...)
	}
	return off, sigs, nil
}

// compare aligns the signatures and counts.
func (r *PageResult) compare(sigA, sigB []uint64) (*PageResult, error) {
	r.Width = max(r.Width, 0)
	r.HeightA, r.HeightB = r.offA[len(r.a)], r.offB[len(r.b)]
	r.Hunks = Align(sigA, sigB, r.opts.MaxEdits)
	if n := len(r.Hunks); r.opts.OpenEnded && n > 0 {
		if h := r.Hunks[n-1]; h.Kind != HunkEqual && h.A1 == r.HeightA && h.B1 == r.HeightB {
			r.Hunks = r.Hunks[:n-1]
		}
	}
	r.inPlaceColumns()
	r.cut()
	r.count()
	return r, nil
}

// raster is segment i of the first page (b false) or the second, decoded
// on first use; ok is false after a decoding error (kept in r.err).
func (r *PageResult) raster(second bool, i int) (raster, bool) {
	rs, src := r.a, r.srcA
	if second {
		rs, src = r.b, r.srcB
	}
	if rs[i].pix != nil || src == nil {
		return rs[i], true
	}
	if r.err != nil {
		return raster{}, false
	}
	s := src[i]
	if s.Height == 0 || s.Width == 0 {
		rs[i] = raster{pix: []byte{}, w: s.Width, h: s.Height}
		return rs[i], true
	}
	img, err := s.Load()
	if err == nil && img == nil {
		err = ErrNilImage
	}
	if err == nil && img.Bounds().Size() != image.Pt(s.Width, s.Height) {
		err = fmt.Errorf("%w: segment %d decoded %v, its manifest says %d×%d", ErrRowHashes, i, img.Bounds().Size(), s.Width, s.Height)
	}
	if err != nil {
		r.err = err
		return raster{}, false
	}
	r.decoded++
	rs[i] = toRaster(img)
	return rs[i], true
}

// sameBytes reports whether the paired rows of p are known, by their
// exact hashes, to have the same bytes.
func (r *PageResult) sameBytes(p piece) bool {
	if r.srcA == nil || r.srcB == nil || p.kind != HunkEqual {
		return false
	}
	ea, eb := r.srcA[p.segA].Exact, r.srcB[p.segB].Exact
	if ea == nil || eb == nil {
		return false
	}
	ya, yb := p.a-r.offA[p.segA], p.b-r.offB[p.segB]
	for k := range p.n {
		if ea[ya+k] != eb[yb+k] {
			return false
		}
	}
	return true
}

// maskedPair counts the pixels of the paired rows of p that the masks of
// either page cover (what the pixel diff would report as masked).
func (r *PageResult) maskedPair(p piece) int {
	if len(r.opts.MaskA) == 0 && len(r.opts.MaskB) == 0 {
		return 0
	}
	rowMask := make([]bool, r.Width)
	count := 0
	for k := range p.n {
		clear(rowMask)
		hit := false
		mark := func(ms []image.Rectangle, y int) {
			for _, m := range ms {
				if y >= m.Min.Y && y < m.Max.Y {
					for x := max(m.Min.X, 0); x < min(m.Max.X, r.Width); x++ {
						rowMask[x], hit = true, true
					}
				}
			}
		}
		mark(r.opts.MaskA, p.a+k)
		mark(r.opts.MaskB, p.b+k)
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
	t := pageTally{
		shiftsB: make([]map[int]int, len(r.b)), shiftsA: make([]map[int]int, len(r.a)),
		pairedA: make([]map[int]int, len(r.a)), pairedB: make([]map[int]int, len(r.b)),
		bounds: make([]image.Rectangle, len(r.b)),
	}
	for _, p := range r.pieces {
		r.countPiece(p, &t)
	}
	for i := range r.Segments {
		s := &r.Segments[i]
		s.Shift = mostRows(t.shiftsB[i], 0)
		s.From = mostRows(t.pairedB[i], -1)
		s.Bounds = t.bounds[i]
		if area := r.Width * (s.Y1 - s.Y0); area > 0 {
			s.Ratio = min(1, float64(s.DiffPixels)/float64(area))
		} else if s.DiffPixels > 0 {
			s.Ratio = 1
		}
	}
	for i := range r.SegmentsA {
		r.SegmentsA[i].Shift = mostRows(t.shiftsA[i], 0)
		r.SegmentsA[i].Segment = mostRows(t.pairedA[i], -1)
	}
}

// pageTally is what count gathers per segment besides the sums: rows by shift and by the
// other page's segment they pair with (on each side), and the bounds of the differences.
type pageTally struct {
	shiftsA, shiftsB, pairedA, pairedB []map[int]int
	bounds                             []image.Rectangle
}

// add adds n rows under key to segment i's map of ms.
func (pageTally) add(ms []map[int]int, i, key, n int) {
	if ms[i] == nil {
		ms[i] = map[int]int{}
	}
	ms[i][key] += n
}

// countPiece diffs one piece and adds it to its segments.
func (r *PageResult) countPiece(p piece, t *pageTally) {
	if p.segB < 0 {
		// The second page is empty: removed rows are counted nowhere.
		r.SegmentsA[p.segA].Removed += p.n
		return
	}
	s := &r.Segments[p.segB]
	top := r.offB[p.segB]
	var d, aa, masked int
	var box image.Rectangle
	switch p.kind {
	case HunkEqual, HunkChanged:
		if r.sameBytes(p) {
			masked = r.maskedPair(p)
		} else if res := r.comparePiece(p, false); res != nil {
			d, aa, masked = res.DiffPixels, res.AAPixels, res.MaskedPixels
			box = res.Bounds.Add(image.Pt(0, p.b-top))
		}
		t.add(t.pairedA, p.segA, p.segB, p.n)
		t.add(t.pairedB, p.segB, p.segA, p.n)
		if p.kind == HunkEqual {
			t.add(t.shiftsB, p.segB, p.b-p.a, p.n)
			t.add(t.shiftsA, p.segA, p.b-p.a, p.n)
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
		t.bounds[p.segB] = t.bounds[p.segB].Union(box)
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
// It is nil when a segment cannot be decoded (r.err).
func (r *PageResult) comparePiece(p piece, withImage bool) *Result {
	ra, okA := r.raster(false, p.segA)
	rb, okB := r.raster(true, p.segB)
	if !okA || !okB {
		return nil
	}
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
// the segment, so callers render only the segments they keep. It is nil
// when a segment of ComparePageSegments' pages cannot be decoded
// (RenderSegmentDiff says why).
func (r *PageResult) SegmentDiff(i int) *image.NRGBA {
	img, _ := r.RenderSegmentDiff(i)
	return img
}

// RenderSegmentDiff is SegmentDiff with the error of a segment's decoding.
// Rows paired with rows of the same bytes (exact hashes) are faded from the
// second page alone: the first page's segment is not decoded for them.
func (r *PageResult) RenderSegmentDiff(i int) (*image.NRGBA, error) {
	if r.err != nil {
		return nil, r.err
	}
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
			if !r.drawPaired(c, p, i, y, out) {
				return nil, r.err
			}
		case HunkInserted:
			rb, ok := r.raster(true, i)
			if !ok {
				return nil, r.err
			}
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
	return out, nil
}

// drawPaired draws piece p of paired rows, at row y of out (segment i's
// diff image): rows of the same bytes faded from the second page alone,
// other rows by a pixel diff of the piece. It reports false when a
// segment cannot be decoded (r.err).
func (r *PageResult) drawPaired(c *comparer, p piece, i, y int, out *image.NRGBA) bool {
	if r.sameBytes(p) && r.maskedPair(p) == 0 {
		rb, ok := r.raster(true, i)
		if !ok {
			return false
		}
		for k := range p.n {
			c.fadeRow(rb.row(y+k), out.Pix[(y+k)*out.Stride:(y+k)*out.Stride+4*r.Width])
		}
		return true
	}
	res := r.comparePiece(p, true)
	if res == nil {
		return false
	}
	copy(out.Pix[y*out.Stride:(y+p.n)*out.Stride], res.Diff.Pix)
	res.Release() // copied: its memory serves the next piece's diff
	return true
}

// SegmentImage is segment i of the first page (second false) or of the
// second, decoded if the comparison has not decoded it yet (it counts in
// Decoded). The image shares the comparison's pixels: read it only.
func (r *PageResult) SegmentImage(second bool, i int) (image.Image, error) {
	rs := r.a
	if second {
		rs = r.b
	}
	if i < 0 || i >= len(rs) {
		return nil, fmt.Errorf("segment %d of %d", i, len(rs))
	}
	ra, ok := r.raster(second, i)
	if !ok {
		return nil, r.err
	}
	return &image.NRGBA{Pix: ra.pix, Stride: ra.stride, Rect: image.Rect(0, 0, ra.w, ra.h)}, nil
}
