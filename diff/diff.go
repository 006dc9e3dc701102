package diff

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"math"
)

const (
	// DefaultThreshold is the per-pixel colour distance (0–1, in YIQ space)
	// used when Options.Threshold is 0: pixelmatch's default.
	DefaultThreshold = 0.1
	// ExactThreshold asks for an exact colour match (threshold 0); any
	// negative Threshold means the same.
	ExactThreshold = -1.0
	// MaxPixels bounds the canvas (width × height of the union of both
	// images) so a corrupt size cannot exhaust memory: 2^28 pixels, ten
	// times a 1280×20,000 page.
	MaxPixels = 1 << 28
	// fadeAlpha is the opacity of the first image in the diff image.
	fadeAlpha = 0.1
)

// Stable errors; match them with errors.Is.
var (
	ErrNilImage       = errors.New("diff: nil image")
	ErrInvalidOptions = errors.New("diff: invalid options")
	ErrTooLarge       = errors.New("diff: image too large")
)

// Colours of the diff image (opaque RGB).
var (
	diffRGB = [3]byte{255, 0, 0}   // a counted difference (also outside one image)
	aaRGB   = [3]byte{255, 255, 0} // a difference explained by anti-aliasing
	maskRGB = [3]byte{0, 96, 255}  // a masked (ignored) pixel
)

// Options tunes Compare. The zero value means pixelmatch's defaults
// (threshold 0.1, anti-aliasing detected) without a diff image.
type Options struct {
	// Threshold is the per-pixel colour distance, 0–1, above which a pixel
	// differs (0.1 allows small changes of shade, e.g. 26 levels of gray).
	// 0 means DefaultThreshold; a negative value (ExactThreshold) means
	// exactly 0, any change of colour counts.
	Threshold float64
	// IncludeAA counts anti-aliased pixels as differences instead of
	// detecting and excusing them.
	IncludeAA bool
	// Mask lists regions, in canvas coordinates with the origin at the top
	// left of both images, that are neither compared nor counted. Parts
	// outside the canvas are ignored.
	Mask []image.Rectangle
	// DiffImage renders Result.Diff.
	DiffImage bool
	// ColorMetric is MetricYIQ (empty: the default, pixelmatch's) or
	// MetricOKLab. Anti-aliasing detection uses YIQ brightness either way.
	ColorMetric string
	// Checkerboard blends semi-transparent pixels over pixelmatch 7's
	// checkerboard (a pattern keyed by the pixel's index) instead of white,
	// as pixelmatch 7.0–7.1 always does: a translucent pixel then differs
	// from the opaque colour it shows over white. YIQ only; opaque images
	// (every screenshot) compare the same either way.
	Checkerboard bool
	// DiffCrop, when above 0, renders the diff image only for the rows from
	// DiffCrop rows above the first difference to DiffCrop rows below the
	// last (Result.Diff's bounds then start at that row, in canvas
	// coordinates; it is empty when nothing differs): a tall page with a
	// small change costs a count and a band, not a full-page render.
	DiffCrop int
}

// DefaultOptions are pixelmatch's defaults with a diff image.
func DefaultOptions() Options {
	return Options{Threshold: DefaultThreshold, DiffImage: true}
}

// Validate reports a Threshold that is NaN or above 1.
func (o Options) Validate() error {
	if math.IsNaN(o.Threshold) || o.Threshold > 1 {
		return fmt.Errorf("%w: threshold %v is not within 0–1", ErrInvalidOptions, o.Threshold)
	}
	switch o.ColorMetric {
	case "", MetricYIQ, MetricOKLab:
	default:
		return fmt.Errorf("%w: colour metric %q is not %q or %q", ErrInvalidOptions, o.ColorMetric, MetricYIQ, MetricOKLab)
	}
	return nil
}

// threshold resolves the zero value and the exact sentinel.
func (o Options) threshold() float64 {
	switch {
	case o.Threshold < 0:
		return 0
	case o.Threshold == 0:
		return DefaultThreshold
	}
	return o.Threshold
}

// Result is the outcome of one comparison.
type Result struct {
	// Width and Height are the canvas compared: the union of both sizes.
	Width, Height int
	// SizeA and SizeB are the sizes of the two images.
	SizeA, SizeB image.Point
	// SizeMismatch is set when the sizes differ; the pixels outside either
	// image are then counted in DiffPixels.
	SizeMismatch bool
	// DiffPixels counts the pixels that differ (anti-aliasing excused
	// unless Options.IncludeAA, masked pixels excluded).
	DiffPixels int
	// AAPixels counts differing pixels excused as anti-aliasing.
	AAPixels int
	// MaskedPixels counts the canvas pixels covered by Options.Mask.
	MaskedPixels int
	// Ratio is DiffPixels / (Width × Height), 0 for an empty canvas.
	Ratio float64
	// Bounds is the smallest rectangle holding every differing pixel;
	// empty when there is none.
	Bounds image.Rectangle
	// Diff is the diff image (canvas size) when Options.DiffImage is set:
	// differences red, anti-aliasing yellow, masked pixels blue, the rest a
	// faded grayscale copy of the first image.
	Diff *image.NRGBA

	ownDiff bool // Diff was drawn by Compare (Release may recycle it)
}

// Release hands the memory of r.Diff back for the diff image of a later
// Compare, and sets r.Diff to nil: call it once the diff image has been
// encoded or read, when nothing will read it again (no copy of the pointer
// either: its pixels will be overwritten). Without it the memory goes to
// the garbage collector; with it, a comparison after another of the same
// size or smaller draws into memory already mapped, instead of taking a
// page fault every 4 KiB (see pixPool). A nil Result, or one without a
// diff image, is left as it is.
func (r *Result) Release() {
	if r == nil || r.Diff == nil {
		return
	}
	if r.ownDiff {
		recyclePix(r.Diff.Pix)
	}
	r.Diff, r.ownDiff = nil, false
}

// Passes reports whether r is within the allowed ratio of differing
// pixels (Ratio <= maxRatio). A size mismatch never passes, nor does a nil
// result.
func Passes(r *Result, maxRatio float64) bool {
	return r != nil && !r.SizeMismatch && r.Ratio <= maxRatio
}

// Compare compares a with b pixel by pixel, both anchored at their top-left
// corner. A size difference is reported in the Result, never as an error;
// errors are only ErrNilImage, ErrInvalidOptions and ErrTooLarge.
func Compare(a, b image.Image, opts Options) (*Result, error) {
	if a == nil || b == nil {
		return nil, ErrNilImage
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	sa, sb := a.Bounds().Size(), b.Bounds().Size()
	w, h := max(sa.X, sb.X), max(sa.Y, sb.Y)
	if int64(w)*int64(h) > MaxPixels {
		return nil, fmt.Errorf("%w: %d×%d canvas exceeds %d pixels", ErrTooLarge, w, h, MaxPixels)
	}
	ra, rb := toRasterLazy(a), toRasterLazy(b)
	r := compareRasters(ra, rb, opts)
	ra.release()
	rb.release()
	return r, nil
}

// compareRasters is Compare on rasters, opts validated and the canvas
// bounded by the caller. Unverified rasters (toRasterLazy) are checked row
// by row as they are compared; on a row with a translucent pixel the
// comparison starts over on settled rasters.
func compareRasters(ra, rb raster, opts Options) *Result {
	if ra.unverified || rb.unverified {
		if r := compareRows(ra, rb, opts, true); r != nil {
			return r
		}
		ra, rb = ra.settle(), rb.settle()
	}
	return compareRows(ra, rb, opts, false)
}

// compareRows is compareRasters; with verify it checks that every row of
// the overlap is opaque in both images, and returns nil when one is not.
func compareRows(ra, rb raster, opts Options, verify bool) *Result {
	if opts.DiffImage && opts.DiffCrop > 0 {
		// Count first, then render only the band of rows around the
		// differences: a tall page with a small change costs no full render.
		counts := opts
		counts.DiffImage = false
		r := compareRows(ra, rb, counts, verify)
		if r == nil {
			return nil // the counts read (and checked) every row
		}
		y0, y1 := 0, 0
		if !r.Bounds.Empty() {
			y0, y1 = max(0, r.Bounds.Min.Y-opts.DiffCrop), min(r.Height, r.Bounds.Max.Y+opts.DiffCrop)
		}
		c := newComparer(ra, rb, opts)
		c.out, c.outY0 = newDiffImage(image.Rect(0, y0, c.w, y1)), y0
		c.run(y0, y1)
		r.Diff, r.ownDiff = c.out, true
		return r
	}
	c := newComparer(ra, rb, opts)
	c.verify = verify
	if opts.DiffImage {
		c.out = newDiffImage(image.Rect(0, 0, c.w, c.h))
	}
	if !c.run(0, c.h) {
		if c.out != nil {
			recyclePix(c.out.Pix) // the comparison starts over
		}
		return nil
	}
	r := c.res
	if c.w*c.h > 0 {
		r.Ratio = float64(r.DiffPixels) / float64(c.w*c.h)
	}
	if c.maxX >= 0 {
		r.Bounds = image.Rect(c.minX, c.minY, c.maxX+1, c.maxY+1)
	}
	r.Diff, r.ownDiff = c.out, c.out != nil
	return r
}

// newComparer prepares the comparison of two rasters (without diff image).
func newComparer(ra, rb raster, opts Options) *comparer {
	sa, sb := image.Pt(ra.w, ra.h), image.Pt(rb.w, rb.h)
	w, h := max(sa.X, sb.X), max(sa.Y, sb.Y)
	// Both views are cut to the overlap, whose size bounds the neighbour
	// look-ups of anti-aliasing detection.
	w0, h0 := min(ra.w, rb.w), min(ra.h, rb.h)
	ra.w, ra.h, rb.w, rb.h = w0, h0, w0, h0
	t := opts.threshold()
	c := &comparer{
		a: ra, b: rb, w: w, h: h,
		maxDelta:  maxYIQDelta * t * t,
		includeAA: opts.IncludeAA,
		checker:   opts.Checkerboard,
		okLab:     opts.ColorMetric == MetricOKLab,
		res:       &Result{Width: w, Height: h, SizeA: sa, SizeB: sb, SizeMismatch: sa != sb},
		minX:      w, minY: h, maxX: -1, maxY: -1,
		grayKey: 0xffffffff, bgKey: -1,
	}
	canvas := image.Rect(0, 0, w, h)
	for _, m := range opts.Mask {
		if m = m.Intersect(canvas); !m.Empty() {
			c.mask = append(c.mask, m)
		}
	}
	if len(c.mask) > 0 {
		c.rowMask = make([]bool, w)
	}
	if c.okLab {
		c.maxDelta = maxOKLabDelta * t
	}
	c.smallD2 = int(c.maxDelta / yiqLambda)
	c.largeD2 = int(c.maxDelta/yiqLambdaMin) + 1
	c.smallX2, c.largeX2 = 255*255*c.smallD2, 255*255*c.largeD2
	return c
}

// comparer holds the state of one Compare call.
type comparer struct {
	a, b      raster // views of the overlap
	w, h      int    // canvas
	maxDelta  float64
	includeAA bool
	checker   bool // Options.Checkerboard
	smallD2   int  // opaque pixels this close (squared channel distance) are below maxDelta
	largeD2   int  // and this far apart above it
	smallX2   int  // smallD2 and largeD2 times 255² (translucentBound)
	largeX2   int
	bgKey     int               // checkerAt's last pixel (byte index), -1 at first
	bgVal     background        // and its colour
	okLab     bool              // MetricOKLab: okLabDelta against maxOKLabDelta·t
	mask      []image.Rectangle // clipped to the canvas, non-empty
	rowMask   []bool            // masked pixels of the current row
	out       *image.NRGBA
	outY0     int // canvas row of out's first row (Options.DiffCrop)
	res       *Result

	minX, minY, maxX, maxY int // bounds of the differing pixels

	grayKey uint32 // memo of faded: the last non-gray pixel (opaque white,
	grayVal uint32 // a gray, at first: never looked up) and its result

	prevFaded bool // the previous row's overlap was drawn by fading alone
	prevSame  bool // the previous row's overlap was equal in both images
	flatNext  int  // antialiased: the pixel (y·w+x) after one flat in both images

	solid solidMemo // solidPair's verdict on the last pair of words

	translucentMemo [8]belowMemo // by background: white, or the checkerboard colour
	boundMemo       belowMemo    // translucentBound's verdict on the last pair (below: decided)
	okLabA, okLabB  okLabMemo    // MetricOKLab: the last colour converted of each image
	touched         byte         // the sum of touch's reads, kept so they are not dropped

	// verify checks each row of the overlap for translucent pixels once it
	// is compared (unverified rasters); translucent says one was found: the
	// comparison is then dropped and starts over on settled rasters.
	verify, translucent bool
}

// compareRow compares canvas row y and draws it into the diff image.
func (c *comparer) compareRow(y int) {
	masked := c.maskRow(y)
	var out []byte
	if c.out != nil {
		off := (y - c.outY0) * c.out.Stride
		out = c.out.Pix[off : off+4*c.w]
	}
	x := 0
	if y < c.a.h {
		ra, rb := c.a.row(y), c.b.row(y)
		same := c.compareOverlap(y, ra, rb, masked, out)
		if c.verify && (!opaqueRow(ra) || (!same && !opaqueRow(rb))) {
			c.translucent = true // nothing of this comparison is kept
			return
		}
		c.prevFaded = same && out != nil && masked == nil
		c.prevSame = same
		x = c.a.w
	}
	for ; x < c.w; x++ { // outside one of the images
		if masked != nil && masked[x] {
			continue
		}
		c.count(x, y)
		if out != nil {
			paint(out, 4*x, diffRGB)
		}
	}
	if masked != nil && out != nil {
		for x, m := range masked {
			if m {
				paint(out, 4*x, maskRGB)
			}
		}
	}
}

// compareOverlap compares the overlap part of row y (rows ra and rb) and
// draws it into out, reporting whether the rows are equal. Without a diff
// image, equal rows cost one bytes.Equal. With one, a row equal to the
// row above in the first image (blank lines, flat backgrounds) copies the
// faded row above when it is also equal in the second image; any other row
// is faded and compared in one pass (compareFadeSpan), as unequal rows
// always were, instead of a bytes.Equal and a fadeRow. The rows below are
// touched ahead (compareSpan) only after a row that differed: on equal rows
// that costs more than it saves.
func (c *comparer) compareOverlap(y int, ra, rb []byte, masked []bool, out []byte) bool {
	if out == nil {
		same := bytes.Equal(ra, rb)
		if !same {
			c.compareSpan(y, ra, rb, masked, nil)
		}
		return same
	}
	n := len(ra)
	out = out[:n:n]
	if c.prevFaded && bytes.Equal(ra, c.a.row(y-1)) && bytes.Equal(ra, rb) {
		copy(out, c.out.Pix[(y-1-c.outY0)*c.out.Stride:][:n])
		return true
	}
	if !c.prevSame {
		return c.compareSpan(y, ra, rb, masked, out)
	}
	return c.fadeEqualQuads(y, ra, rb[:n:n], masked, out)
}

// fadeEqualQuads is compareFadeSpan for a row that is likely equal in both
// images: while it is, four opaque pixels of the first image are faded a
// step, again only when they are not the four before: one branch a step
// where compareFadeSpan's memo of pairs takes one a pair, mispredicted on
// text rows (ink and background alternate). The rest of the row, from the
// first four pixels that differ or hold a translucent one, goes to
// compareFadeSpan.
func (c *comparer) fadeEqualQuads(y int, ra, rb []byte, masked []bool, out []byte) (same bool) {
	n := len(ra)
	rb, out = rb[:n:n], out[:n:n]
	le := binary.LittleEndian
	white := uint64(fadedOpaque(0xffffffff)) * 0x1_0000_0001
	k0, k1, v0, v1 := uint64(whitePair), uint64(whitePair), white, white
	i := 0
	for ; i <= n-16; i += 16 {
		a0, a1 := le.Uint64(ra[i:]), le.Uint64(ra[i+8:])
		if a0 != le.Uint64(rb[i:]) || a1 != le.Uint64(rb[i+8:]) {
			break
		}
		if a0 != k0 || a1 != k1 {
			if a0&a1&opaquePair != opaquePair {
				break
			}
			k0, k1, v0, v1 = a0, a1, fadedOpaquePair(a0), fadedOpaquePair(a1)
		}
		le.PutUint64(out[i:], v0)
		le.PutUint64(out[i+8:], v1)
	}
	return c.compareFadeSpan(i, y, ra, rb, masked, out)
}

// compareSpan runs pixelmatch over the overlap part of row y, which
// differs somewhere or follows a row that did: the rows below are touched
// ahead (touch), the whole row is faded (runs of background costing a
// compare a pixel pair; in the same pass, with a diff image:
// compareFadeSpan), pairs of pixels equal in both images are skipped with
// one 64-bit compare, and only the pixels of unequal pairs are measured; a
// difference then paints over its faded pixel. It reports whether the rows
// were equal (always false without a diff image: called on unequal rows).
func (c *comparer) compareSpan(y int, ra, rb []byte, masked []bool, out []byte) bool {
	n := 4 * c.a.w
	ra, rb = ra[:n:n], rb[:n:n]
	if y+1 < c.a.h {
		c.touched += touch(c.a.row(y+1)) + touch(c.b.row(y+1))
	}
	if out != nil {
		return c.compareFadeSpan(0, y, ra, rb, masked, out[:n:n])
	}
	i := 0
	for n := len(ra); i <= n-8; i += 8 { // i <= n-8, not i+8 <= n: the form Go drops bounds checks for
		wa, wb := binary.LittleEndian.Uint64(ra[i:]), binary.LittleEndian.Uint64(rb[i:])
		if wa == wb {
			continue
		}
		if !c.smallOpaque(uint32(wa), uint32(wb)) {
			if uniformPairs(wa, wb) && c.solidPair(i, y, wa, wb, masked) {
				continue
			}
			c.comparePixel(i/4, y, ra, rb, masked, out)
		}
		if !c.smallOpaque(uint32(wa>>32), uint32(wb>>32)) {
			c.comparePixel(i/4+1, y, ra, rb, masked, out)
		}
	}
	if i < n {
		c.comparePixel(i/4, y, ra, rb, masked, out)
	}
	return false
}

// touch reads one byte of each cache line of row, independent loads that
// the processor overlaps: the anti-aliasing test of a row reads the row
// below in both images, whose misses would otherwise come one at a time,
// each behind the branches of the pixel before.
func touch(row []byte) byte {
	var sum byte
	for i := 0; i < len(row); i += 64 {
		sum += row[i]
	}
	return sum
}

// compareFadeSpan is compareSpan's loop with fadeRow's in one pass: each
// pair of pixels of the first image is faded into out before its
// differences are measured and painted over it. Opaque pairs fade in
// integers (fadedOpaquePair); from the first pair with a translucent pixel
// on, the rest of the row goes to compareFadeSpanMixed. It starts at byte
// i and reports whether the rows were equal from there on.
func (c *comparer) compareFadeSpan(i, y int, ra, rb []byte, masked []bool, out []byte) (same bool) {
	n := len(ra)
	rb, out = rb[:n:n], out[:n:n]
	pairKey, pairVal := uint64(whitePair), uint64(fadedOpaque(0xffffffff))*0x1_0000_0001
	differ := false
	for ; i <= n-8; i += 8 {
		wa, wb := binary.LittleEndian.Uint64(ra[i:]), binary.LittleEndian.Uint64(rb[i:])
		if wa != pairKey {
			if wa&opaquePair != opaquePair {
				break
			}
			pairKey, pairVal = wa, fadedOpaquePair(wa)
		}
		binary.LittleEndian.PutUint64(out[i:], pairVal)
		if wa == wb {
			continue
		}
		differ = true
		if !c.smallOpaque(uint32(wa), uint32(wb)) {
			if uniformPairs(wa, wb) && c.solidPair(i, y, wa, wb, masked) {
				binary.LittleEndian.PutUint64(out[i:], diffPair)
				continue
			}
			c.comparePixel(i/4, y, ra, rb, masked, out)
		}
		if !c.smallOpaque(uint32(wa>>32), uint32(wb>>32)) {
			c.comparePixel(i/4+1, y, ra, rb, masked, out)
		}
	}
	return c.compareFadeSpanMixed(i, y, ra, rb, masked, out) && !differ
}

// compareFadeSpanMixed is compareFadeSpan from byte i of a row with
// translucent pixels: a pair of the first image unequal to the one before
// is faded in floating point (fadedColor), opaque pixels too (the same
// bytes, TestFadedOpaqueExact), so no branch depends on their opacity
// (it was mispredicted on rows where opaque and translucent pixels mix).
// It reports whether the rows were equal from byte i on.
func (c *comparer) compareFadeSpanMixed(i, y int, ra, rb []byte, masked []bool, out []byte) (same bool) {
	n := len(ra)
	rb, out = rb[:n:n], out[:n:n]
	pairKey, pairVal := uint64(whitePair), uint64(fadedOpaque(0xffffffff))*0x1_0000_0001
	differ := false
	for ; i <= n-8; i += 8 {
		wa, wb := binary.LittleEndian.Uint64(ra[i:]), binary.LittleEndian.Uint64(rb[i:])
		if wa != pairKey {
			pairKey, pairVal = wa, uint64(fadedColor(uint32(wa)))|uint64(fadedColor(uint32(wa>>32)))<<32
		}
		binary.LittleEndian.PutUint64(out[i:], pairVal)
		if wa == wb {
			continue
		}
		differ = true
		if !c.smallOpaque(uint32(wa), uint32(wb)) {
			if uniformPairs(wa, wb) && c.solidPair(i, y, wa, wb, masked) {
				binary.LittleEndian.PutUint64(out[i:], diffPair)
				continue
			}
			c.comparePixel(i/4, y, ra, rb, masked, out)
		}
		if !c.smallOpaque(uint32(wa>>32), uint32(wb>>32)) {
			c.comparePixel(i/4+1, y, ra, rb, masked, out)
		}
	}
	if i < n {
		binary.LittleEndian.PutUint32(out[i:], c.faded(binary.LittleEndian.Uint32(ra[i:])))
		differ = differ || binary.LittleEndian.Uint32(ra[i:]) != binary.LittleEndian.Uint32(rb[i:])
		c.comparePixel(i/4, y, ra, rb, masked, out)
	}
	return !differ
}

// solidMemo is solidPair's verdict on the last pair of words.
type solidMemo struct {
	a, b       uint64
	set, above bool
}

// diffPair is two pixels painted diffRGB, as a little-endian word.
const diffPair = uint64(0xff0000ff) * (1<<32 + 1)

// uniformPairs reports whether words wa and wb each hold one colour twice
// (solidPair's first test, inlined in the loops after smallOpaque's: a
// call a pair of unequal pixels cost busy pairs up to 10%).
func uniformPairs(wa, wb uint64) bool {
	return uint32(wa) == uint32(wa>>32) && uint32(wb) == uint32(wb>>32)
}

// solidPair decides, and counts, the two unequal pixels at byte i of row
// y, words wa of the first image and wb of the second (uniformPairs), when
// they lie inside a changed area of one colour: the two colours are above
// the threshold at any position (aboveAnywhere), and in each image the
// two pixels above the pair have its colour. Each
// pixel then has three neighbours of its colour in both images (the other
// pixel of the pair, the one above it and the one above the other), so
// pixelmatch finds no anti-aliasing in either, at an edge too, and both
// count. It reports false, and counts nothing, otherwise (masked rows
// too): the caller then compares the pixels one by one. The caller paints.
func (c *comparer) solidPair(i, y int, wa, wb uint64, masked []bool) bool {
	if masked != nil || y == 0 {
		return false
	}
	le := binary.LittleEndian
	if !c.includeAA && (le.Uint64(c.a.pix[(y-1)*c.a.stride+i:]) != wa || le.Uint64(c.b.pix[(y-1)*c.b.stride+i:]) != wb) {
		return false
	}
	if m := &c.solid; !m.set || m.a != wa || m.b != wb {
		m.a, m.b, m.set = wa, wb, true
		m.above = c.aboveAnywhere(uint32(wa), uint32(wb))
	}
	if !c.solid.above {
		return false
	}
	x := i / 4
	c.res.DiffPixels += 2
	c.minX, c.maxX = min(c.minX, x), max(c.maxX, x+1)
	c.minY, c.maxY = min(c.minY, y), max(c.maxY, y)
	return true
}

// aboveAnywhere reports whether unequal pixels pa and pb are above the
// threshold wherever they are: below does not depend on the position but
// for a translucent pair over the checkerboard, which counts only when
// translucentBound decides it for every background colour.
func (c *comparer) aboveAnywhere(pa, pb uint32) bool {
	if c.checker && !c.okLab && pa&pb>>24 != 0xff {
		below, decided := c.translucentBound(pa, pb)
		return decided && !below
	}
	var p, q [4]byte
	binary.LittleEndian.PutUint32(p[:], pa)
	binary.LittleEndian.PutUint32(q[:], pb)
	return !c.below(pa, pb, p[:], q[:], 0, 0)
}

// smallOpaque reports whether pixels pa and pb are equal, or opaque with
// channels so close (c.smallD2) that they are below the threshold: the
// common case of re-encoded or re-rendered content, decided inline.
func (c *comparer) smallOpaque(pa, pb uint32) bool {
	if pa == pb {
		return true
	}
	dr, dg, db := int(pa&0xff)-int(pb&0xff), int(pa>>8&0xff)-int(pb>>8&0xff), int(pa>>16&0xff)-int(pb>>16&0xff)
	return pa&pb >= 0xff000000 && dr*dr+dg*dg+db*db <= c.smallD2
}

// comparePixel runs pixelmatch on pixel x of row y (rows ra of the first
// image and rb of the second), whose faded pixel out already holds.
func (c *comparer) comparePixel(x, y int, ra, rb []byte, masked []bool, out []byte) {
	i := 4 * x
	if masked != nil && masked[x] {
		return
	}
	p, q := ra[i:i+4:i+4], rb[i:i+4:i+4]
	pa, pb := binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(q)
	if pa == pb || c.below(pa, pb, p, q, x, y) {
		return
	}
	if !c.includeAA && c.antialiased(x, y, pa, pb) {
		c.res.AAPixels++
		if out != nil {
			paint(out, i, aaRGB)
		}
		return
	}
	c.count(x, y)
	if out != nil {
		paint(out, i, diffRGB)
	}
}

// below reports whether the unequal pixels pa of p and pb of q, at (x, y),
// are within the threshold. Opaque pixels whose channels moved little or
// much are decided in integers (yiqLambda, yiqLambdaMin), the others as
// pixelmatch does.
func (c *comparer) below(pa, pb uint32, p, q []byte, x, y int) bool {
	if c.okLab {
		l1, a1, b1 := c.okLabA.lab(pa, p)
		l2, a2, b2 := c.okLabB.lab(pb, q)
		da, db := a1-a2, b1-b2
		return math.Abs(l1-l2)+math.Sqrt(da*da+db*db) <= c.maxDelta // okLabDelta
	}
	if pa&pb>>24 == 0xff {
		dr, dg, db := int(p[0])-int(q[0]), int(p[1])-int(q[1]), int(p[2])-int(q[2])
		switch d2 := dr*dr + dg*dg + db*db; {
		case d2 <= c.smallD2:
			return true
		case d2 >= c.largeD2:
			return false
		}
		return math.Abs(opaqueDelta(p, q)) <= c.maxDelta
	}
	bm, key := &c.boundMemo, uint64(pa)|uint64(pb)<<32
	if !bm.set || bm.key != key {
		bm.key, bm.set = key, true
		bm.below, bm.decided = c.translucentBound(pa, pb)
	}
	if bm.decided {
		return bm.below
	}
	bg, slot := bgWhite, 0
	if c.checker {
		bg = c.checkerAt(x, y)
		slot = b2i(bg.r > 128) | b2i(bg.g > 128)<<1 | b2i(bg.b > 128)<<2
	}
	m := &c.translucentMemo[slot]
	if !m.set || m.key != key {
		m.key, m.set = key, true
		m.below = math.Abs(colorDeltaBlended(p, q, bg, false)) <= c.maxDelta
	}
	return m.below
}

// translucentBound decides below for a pair with a translucent pixel (pa,
// pb) by the YIQ form's bounds, as for opaque pairs (yiqLambda,
// yiqLambdaMin), on its channel differences X/255, X = c1·a1 − c2·a2 −
// bg·(a1−a2) (pixelmatch's numerators over the checkerboard; over white,
// bg 255, the blends' differences times 255), over every background colour
// the pair may be blended with (the checkerboard's red is 48 at every
// pixel): ok is false unless the bounds decide alike over all of them.
// Over white, X = 0 for pixels that differ is left to the floating point
// (the blends may round apart). Rounding is far below the bounds' margins
// (TestTranslucentBoundExact).
func (c *comparer) translucentBound(pa, pb uint32) (below, ok bool) {
	a1, a2 := int(pa>>24), int(pb>>24)
	da := a1 - a2
	xr := int(pa&0xff)*a1 - int(pb&0xff)*a2
	xg := int(pa>>8&0xff)*a1 - int(pb>>8&0xff)*a2
	xb := int(pa>>16&0xff)*a1 - int(pb>>16&0xff)*a2
	if !c.checker {
		xr, xg, xb = xr-255*da, xg-255*da, xb-255*da
		d2 := xr*xr + xg*xg + xb*xb
		return d2 <= c.smallX2, d2 > 0 && d2 <= c.smallX2 || d2 >= c.largeX2
	}
	xr -= 48 * da
	g0, g1, b0, b1 := xg-48*da, xg-207*da, xb-48*da, xb-207*da
	g0, g1, b0, b1 = g0*g0, g1*g1, b0*b0, b1*b1
	switch {
	case xr*xr+max(g0, g1)+max(b0, b1) <= c.smallX2:
		return true, true
	case xr*xr+min(g0, g1)+min(b0, b1) >= c.largeX2:
		return false, true
	}
	return false, false
}

// checkerAt is checkerAt of pixel (x, y) of the overlap, the last one
// kept: below and both images' anti-aliasing tests of a pixel ask for it.
func (c *comparer) checkerAt(x, y int) background {
	if k := 4 * (y*c.a.w + x); k != c.bgKey {
		c.bgKey, c.bgVal = k, checkerAt(k)
	}
	return c.bgVal
}

// okLabMemo is the OKLab colour (okLab, blended with white) of the last
// pixel of one image that below converted: runs of one colour convert once.
type okLabMemo struct {
	key     uint32
	set     bool
	l, a, b float64
}

// lab is the OKLab colour of pixel v (bytes p).
func (m *okLabMemo) lab(v uint32, p []byte) (l, a, b float64) {
	if !m.set || m.key != v {
		m.key, m.set = v, true
		m.l, m.a, m.b = okLab(blendRGB(p[0], p[1], p[2], p[3]))
	}
	return m.l, m.a, m.b
}

// belowMemo is below's verdict on the last pair of pixels (key: both
// words) with a translucent pixel over one background colour: uniform
// translucent regions cost a compare a pixel.
type belowMemo struct {
	key                 uint64
	set, below, decided bool
}

// count records a differing pixel.
func (c *comparer) count(x, y int) {
	c.res.DiffPixels++
	c.minX, c.maxX = min(c.minX, x), max(c.maxX, x)
	c.minY, c.maxY = min(c.minY, y), max(c.maxY, y)
}

// maskRow marks the masked pixels of row y in c.rowMask and returns it, or
// nil when no mask covers the row.
func (c *comparer) maskRow(y int) []bool {
	hit := false
	for _, m := range c.mask {
		if y >= m.Min.Y && y < m.Max.Y {
			if !hit {
				clear(c.rowMask)
				hit = true
			}
			for x := m.Min.X; x < m.Max.X; x++ {
				c.rowMask[x] = true
			}
		}
	}
	if !hit {
		return nil
	}
	for _, m := range c.rowMask {
		if m {
			c.res.MaskedPixels++
		}
	}
	return c.rowMask
}

// fadeRow draws every pixel of src faded into dst (faded, inlined by hand),
// two pixels a word: a pair equal to the last pair (runs of background)
// costs a compare and a store.
func (c *comparer) fadeRow(src, dst []byte) {
	dst = dst[:len(src):len(src)]
	pairKey, pairVal := uint64(whitePair), uint64(fadedOpaque(0xffffffff))*0x1_0000_0001
	i := 0
	for n := len(src); i <= n-8; i += 8 {
		w := binary.LittleEndian.Uint64(src[i:])
		if w != pairKey {
			pairKey = w
			if w&opaquePair == opaquePair { // inline: no call for opaque pixels
				pairVal = fadedOpaquePair(w)
			} else {
				pairVal = uint64(c.faded(uint32(w))) | uint64(c.faded(uint32(w>>32)))<<32
			}
		}
		binary.LittleEndian.PutUint64(dst[i:], pairVal)
	}
	if i+4 <= len(src) {
		binary.LittleEndian.PutUint32(dst[i:], c.faded(binary.LittleEndian.Uint32(src[i:])))
	}
}

// whitePair is two opaque white pixels as a little-endian word;
// opaquePair the alpha bytes of two pixels.
const (
	whitePair  = 0xffffffff_ffffffff
	opaquePair = 0xff000000_ff000000
)

// faded returns pixelmatch's gray pixel for p (bytes R, G, B, A from the
// lowest): its luma blended with white at opacity fadeAlpha·alpha,
// truncated to a byte as pixelmatch's command line (pngjs buffers) does.
// Opaque pixels take fadedOpaque; the last translucent colour is memoized.
func (c *comparer) faded(p uint32) uint32 {
	if p>>24 == 0xff {
		return fadedOpaque(p)
	}
	if p != c.grayKey {
		c.grayKey, c.grayVal = p, fadedColor(p)
	}
	return c.grayVal
}

// fadedOpaque is fadedColor of an opaque pixel in integers: the luma's
// weights have eight decimals, so 10⁹·(255 + (Y−255)·0.1) is an integer
// sum, and its quotient by 10⁹ is fadedColor's byte for every opaque
// colour (TestFadedOpaqueExact checks all 2²⁴).
func fadedOpaque(p uint32) uint32 {
	yk := 29889531*uint64(p&0xff) + 58662247*uint64(p>>8&0xff) + 11448223*uint64(p>>16&0xff)
	return grayWord(byte((yk + 229_500_000_000) / 1_000_000_000))
}

// Weights of fadedOpaquePair: fadedOpaque's luma weights scaled by 2²⁷/10
// and tuned so that (fadeR·r + fadeG·g + fadeB·b + 2²⁶) >> 27 is its byte
// minus 229 for every opaque colour (TestFadedOpaquePairExact), with sums
// below 2³²: two pixels fade in the two 32-bit halves of one word.
const (
	fadeR, fadeG, fadeB = 4011704, 7873514, 1536555
	fadeLanes           = 0x000000ff_000000ff // the low byte of each half
)

// fadedOpaquePair is fadedOpaque of the two opaque pixels of word w (the
// first in the low half), both at once: each half holds one pixel's sum.
func fadedOpaquePair(w uint64) uint64 {
	sum := (w&fadeLanes)*fadeR + (w>>8&fadeLanes)*fadeG + (w>>16&fadeLanes)*fadeB + 1<<26*(1<<32+1)
	k := sum >> 27 & 0x0000001f_0000001f // 0–26 in each half
	return (k+229*(1<<32+1))*0x010101 | opaquePair
}

// fadedColor computes faded's result in floating point.
func fadedColor(p uint32) uint32 {
	y := rgb2y(float64(p&0xff), float64(p>>8&0xff), float64(p>>16&0xff))
	return grayWord(byte(blend(y, fadeOpacity[p>>24])))
}

// fadeOpacity is fadeAlpha·alpha/255 for every alpha.
var fadeOpacity = func() (t [256]float64) {
	for a := range t {
		t[a] = fadeAlpha * float64(a) / 255
	}
	return t
}()

// grayWord is the opaque gray pixel (v, v, v, 255) as a little-endian word.
func grayWord(v byte) uint32 { return uint32(v)*0x010101 | 0xff000000 }

// paint draws an opaque colour at byte offset i.
func paint(dst []byte, i int, rgb [3]byte) {
	binary.LittleEndian.PutUint32(dst[i:i+4:i+4], uint32(rgb[0])|uint32(rgb[1])<<8|uint32(rgb[2])<<16|0xff000000)
}

// Marks reports whether pixel (x, y) of a diff image made by Compare or
// PageResult.SegmentDiff marks a counted difference: a changed pixel, an
// inserted row or a removal marker. Anti-aliasing, masked pixels and the
// faded unchanged pixels are not marks. Points outside img are not.
func Marks(img *image.NRGBA, x, y int) bool {
	if !(image.Point{X: x, Y: y}).In(img.Rect) {
		return false
	}
	p := img.Pix[img.PixOffset(x, y):]
	rgb := [3]byte{p[0], p[1], p[2]}
	switch {
	case rgb[0] == rgb[1] && rgb[1] == rgb[2]: // faded gray: unchanged
		return false
	case rgb == aaRGB, rgb == maskRGB:
		return false
	}
	return true
}
