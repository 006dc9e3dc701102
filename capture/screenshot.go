package capture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
	_ "golang.org/x/image/webp" // registers WebP for image.DecodeConfig

	"github.com/snapq/snapq/capture/internal/pngcut"
	snapdiff "github.com/snapq/snapq/diff"
	"github.com/snapq/snapq/thumbnail"
)

// Image height limits in device pixels for one image encoded by Chromium. Chromium reports
// success with an EMPTY image past its encoders' limits, so these are checked up front (and
// every image is checked after the fact too).
const (
	MaxWebPHeight = 16383 // WebP is empty above 16,383 px
	MaxJPEGHeight = 65534 // JPEG is empty from 65,535 px
	// MaxPNGHeight is this package's own bound for one full-page PNG: Chromium stays correct
	// far beyond (200,000 px measured) but memory grows to gigabytes and time to seconds.
	MaxPNGHeight = 100000
)

// captureChunkHeight is the tallest region (device px) captured in one call when segments are
// cut in Go: it bounds Chromium's texture and Go's decode memory (~4 bytes per pixel).
const captureChunkHeight = 16000

// maxHeight returns the format's single-image limit.
func maxHeight(format string) int {
	switch format {
	case FormatWebP:
		return MaxWebPHeight
	case FormatJPEG:
		return MaxJPEGHeight
	}
	return MaxPNGHeight
}

func contentType(format string) string {
	switch format {
	case FormatJPEG:
		return "image/jpeg"
	case FormatWebP:
		return "image/webp"
	}
	return "image/png"
}

func extension(format string) string {
	switch format {
	case FormatJPEG:
		return "jpg"
	case FormatWebP:
		return "webp"
	}
	return "png"
}

// devicePx converts CSS pixels to device pixels.
func devicePx(css int, dsf float64) int { return int(math.Round(float64(css) * dsf)) }

// shots is what shoot produced.
type shots struct {
	images   []Image
	segments Segments
	encode   time.Duration   // spent decoding and encoding in Go
	calls    []time.Duration // each Page.captureScreenshot call that answered, in order
	byteErr  *Error          // why segments stopped at the byte budget (shootArea only)
}

// shoot captures the loaded page according to req.Screenshot, within the job's budget b.
func shoot(ctx context.Context, p *rod.Page, req Request, pageHeight int, b *budget, callTimeout time.Duration) (shots, error) {
	return shootArea(ctx, p, req, area{Width: req.Viewport.Width, Height: pageHeight}, b, callTimeout)
}

// shootArea captures the part of the page a covers (the whole page, or one element: see
// element.go) according to req.Screenshot, as if that part were the page. Every capture call
// is checked against b before it is made (budget.go): an image or a job over its limits fails
// with CodeTooLargeCapture, except segments, which stop at the budget like at max_segments.
func shootArea(ctx context.Context, p *rod.Page, req Request, a area, b *budget, callTimeout time.Duration) (shots, error) {
	vp, sc := req.Viewport, req.Screenshot
	var calls []time.Duration
	sh := shooter{req: req, a: a, b: b, c: capturer{ctx: ctx, p: p, format: sc.Format, quality: sc.Quality, dsf: vp.DeviceScaleFactor,
		width: a.Width, x: a.X, y: a.Y, timeout: callTimeout, calls: &calls}}
	sh.devW = devicePx(a.Width, sh.c.dsf)
	what := "page"
	if a.element {
		what = "element"
	}
	if err := b.checkWidth(what, sh.devW); err != nil {
		return shots{}, err
	}
	s, err := sh.shoot()
	s.calls = calls
	return s, err
}

// shoot takes the area's screenshots in the request's mode.
func (sh *shooter) shoot() (shots, error) {
	vp, sc := sh.req.Viewport, sh.req.Screenshot
	a := sh.a
	switch sc.Mode {
	case ModeViewport:
		var clip *Rect
		h := vp.Height
		if a.element {
			h = min(a.Height, vp.Height)
			clip = &Rect{Y: 0, Height: h}
		}
		return sh.one(clip, h)
	case ModeFull:
		return sh.full()
	}
	return sh.segments()
}

// shooter is one shootArea call: the capturer of the area, the request and the job's budget.
type shooter struct {
	c    capturer
	req  Request
	a    area
	b    *budget
	devW int // the area's width in device px
}

// name is the file name of image i of total.
func (sh *shooter) name(i int, total int) string {
	ext := extension(sh.req.Screenshot.Format)
	if total == 1 {
		return sh.req.Name + "." + ext
	}
	return fmt.Sprintf("%s-%03d.%s", sh.req.Name, i, ext)
}

// one captures a single image of cssHeight and counts it.
func (sh *shooter) one(clip *Rect, cssHeight int) (shots, error) {
	if err := sh.b.fits(sh.devW, devicePx(cssHeight, sh.c.dsf)); err != nil {
		return shots{}, err
	}
	img, err := sh.c.direct(clip, cssHeight)
	if err != nil {
		return shots{}, err
	}
	img.Name, img.Index = sh.name(1, 1), 1
	if err := sh.b.take(img); err != nil {
		return shots{}, err
	}
	return shots{images: []Image{img}, segments: Segments{Total: 1, Captured: 1}}, nil
}

// full captures the whole area as one image, or fails with CodeTooTall past the format's
// height limit.
func (sh *shooter) full() (shots, error) {
	sc := sh.req.Screenshot
	h := max(sh.a.Height, sh.req.Viewport.Height)
	if sh.a.element {
		h = sh.a.Height
	}
	if dh := devicePx(h, sh.c.dsf); dh > maxHeight(sc.Format) {
		return shots{}, newError(CodeTooTall, false, nil,
			"the page is %d device px tall, over the %d px limit of one %s image; use mode %q",
			dh, maxHeight(sc.Format), sc.Format, ModeSegments)
	}
	return sh.one(&Rect{Y: 0, Height: h}, h)
}

// segments captures the area in viewport-height pieces, up to max_segments and the budget.
func (sh *shooter) segments() (shots, error) {
	vp, sc := sh.req.Viewport, sh.req.Screenshot
	plan := PlanSegments(sh.a.Height, vp.Height, sc.MaxSegments)
	if sh.a.element && sh.a.Height < vp.Height {
		plan.Rects[0].Height = sh.a.Height // an element is as tall as it is, not one screen
	}
	plan, berr := sh.b.keepFitting(plan, sh.devW, sh.c.dsf)
	if berr != nil {
		return shots{}, berr
	}
	out := shots{segments: Segments{Total: plan.Total, Captured: plan.Captured, Truncated: plan.Truncated}}
	if sc.Format == FormatWebP || plan.Captured == 1 {
		return sh.segmentsDirect(plan, out)
	}
	return sh.segmentsCut(plan, out)
}

// segmentsDirect captures each piece by its own clip call: Go cannot encode WebP (each piece
// is at most one viewport, far below WebP's limit), and a single piece needs no cutting.
func (sh *shooter) segmentsDirect(plan Plan, out shots) (shots, error) {
	vp, sc := sh.req.Viewport, sh.req.Screenshot
	if dh := devicePx(vp.Height, sh.c.dsf); dh > maxHeight(sc.Format) {
		return shots{}, newError(CodeTooTall, false, nil,
			"the viewport is %d device px tall, over the %d px limit of one %s image", dh, maxHeight(sc.Format), sc.Format)
	}
	for i, r := range plan.Rects {
		img, err := sh.c.direct(&r, r.Height)
		if err != nil {
			return shots{}, err
		}
		img.Y, img.YCSS = devicePx(r.Y, sh.c.dsf), r.Y
		if sc.Format == FormatPNG { // one piece: decoding one viewport is cheap
			if dec, err := png.Decode(bytes.NewReader(img.Data)); err == nil {
				img.RowSigs, img.RowExact = snapdiff.RowHashes(dec)
				img.colours = sampleImage(dec)
				if i == 0 {
					img.Preview = previewOf(dec)
				}
			}
		}
		img.Name, img.Index = sh.name(i+1, plan.Total), i+1
		if !out.keep(img, sh.b) {
			break
		}
	}
	return out.fitted()
}

// segmentsCut captures the needed region of a PNG or JPEG once (in chunks of at most
// captureChunkHeight device px, aligned to pieces) and cuts it in Go. One clip call per
// piece re-renders the whole document each time (2.4–3.6× a full capture on 24–35k px
// pages); this was ~1.56×. A band is also at most one image's pixels (a piece always is:
// keepFitting checked it).
func (sh *shooter) segmentsCut(plan Plan, out shots) (shots, error) {
	for start := 0; start < len(plan.Rects); {
		end := start + 1 // exclusive
		top := plan.Rects[start].Y
		for end < len(plan.Rects) {
			r := plan.Rects[end]
			bandH := devicePx(r.Y+r.Height, sh.c.dsf) - devicePx(top, sh.c.dsf)
			if bandH > captureChunkHeight || int64(sh.devW)*int64(bandH) > sh.b.lim.ImagePixels {
				break
			}
			end++
		}
		imgs, enc, err := sh.c.cut(plan.Rects[start:end], start == 0)
		if err != nil {
			return shots{}, err
		}
		out.encode += enc
		for i := range imgs {
			imgs[i].Index = start + i + 1
			imgs[i].Name = sh.name(start+i+1, plan.Total)
			if !out.keep(imgs[i], sh.b) {
				return out.fitted()
			}
		}
		start = end
	}
	return out.fitted()
}

// keep adds a segment to s when the job's byte budget has room, and reports whether it had:
// when not, the segments end there, truncated, as at max_segments. byteErr keeps the reason
// for a first segment that does not fit.
func (s *shots) keep(img Image, b *budget) bool {
	if err := b.take(img); err != nil {
		s.byteErr = err
		s.segments.Captured = len(s.images)
		s.segments.Truncated = true
		return false
	}
	s.images = append(s.images, img)
	return true
}

// fitted is s as shootArea returns it: an error when not even the first segment fit.
func (s shots) fitted() (shots, error) {
	if len(s.images) == 0 && s.byteErr != nil {
		return shots{}, s.byteErr
	}
	s.byteErr = nil
	return s, nil
}

// capturer holds what every capture call of one job shares.
type capturer struct {
	ctx     context.Context
	p       *rod.Page
	format  string
	quality int
	dsf     float64
	width   int // CSS px
	x, y    int // CSS px: where the captured area starts in the document (clip rects are relative to it)
	timeout time.Duration
	calls   *[]time.Duration // where call records the time of each call that answered
}

// call runs one Page.captureScreenshot bounded by the call timeout. clip nil captures the
// viewport as shown.
func (c capturer) call(format string, clip *Rect, fast bool) ([]byte, error) {
	cctx, cancel := context.WithTimeout(c.ctx, c.timeout)
	defer cancel()
	req := proto.PageCaptureScreenshot{
		Format:           proto.PageCaptureScreenshotFormat(format),
		FromSurface:      true,
		OptimizeForSpeed: fast,
	}
	if format != FormatPNG && c.quality > 0 {
		q := c.quality
		req.Quality = &q
	}
	if clip != nil {
		// Clip rectangles are in CSS px; scale 1 renders them at device pixels. Capturing
		// beyond the viewport lays the whole document out at once, without scrolling, so
		// fixed headers stay at the top of the page.
		req.Clip = &proto.PageViewport{X: float64(c.x), Y: float64(c.y + clip.Y), Width: float64(c.width), Height: float64(clip.Height), Scale: 1}
		req.CaptureBeyondViewport = true
	}
	start := time.Now()
	res, err := req.Call(c.p.Context(cctx))
	if err != nil {
		if c.ctx.Err() == nil && cctx.Err() != nil {
			return nil, fmt.Errorf("%w (%s)", errCallTimeout, c.timeout)
		}
		return nil, fmt.Errorf("capture screenshot: %w", err)
	}
	if c.calls != nil {
		*c.calls = append(*c.calls, time.Since(start))
	}
	return res.Data, nil
}

// direct captures one image encoded by Chromium in the requested format and checks it.
func (c capturer) direct(clip *Rect, cssHeight int) (Image, error) {
	data, err := c.call(c.format, clip, false)
	if err != nil {
		return Image{}, err
	}
	w, h := devicePx(c.width, c.dsf), devicePx(cssHeight, c.dsf)
	if err := checkImage(data, c.format, w, h); err != nil {
		return Image{}, err
	}
	return Image{ContentType: contentType(c.format), Data: data, Width: w, Height: h}, nil
}

// cut captures the band covering rects (consecutive pieces) as one PNG and encodes each piece;
// first: the band starts with the first segment, whose preview it makes.
func (c capturer) cut(rects []Rect, first bool) ([]Image, time.Duration, error) {
	top := rects[0].Y
	last := rects[len(rects)-1]
	band := Rect{Y: top, Height: last.Y + last.Height - top}
	data, err := c.call(FormatPNG, &band, true) // decoded right away: favour speed over size
	if err != nil {
		return nil, 0, err
	}
	w, h := devicePx(c.width, c.dsf), devicePx(band.Height, c.dsf)
	if err := checkImage(data, FormatPNG, w, h); err != nil {
		return nil, 0, err
	}

	start := time.Now()
	cuts := make([]pngcut.Range, len(rects))
	for i, r := range rects {
		y0 := devicePx(r.Y, c.dsf) - devicePx(top, c.dsf)
		y1 := min(devicePx(r.Y+r.Height, c.dsf)-devicePx(top, c.dsf), h)
		cuts[i] = pngcut.Range{Y0: y0, Y1: y1}
	}
	var imgs []Image
	if c.format == FormatPNG {
		// Cut the PNG rows directly (no image.Image, no filter search); other layouts than
		// Chromium's 8-bit RGB(A) fall back to decoding below.
		hs := newRowHasher(w, cuts, first)
		pieces, err := pngcut.CutRows(data, cuts, hs.row)
		if err == nil {
			imgs = make([]Image, len(pieces))
			for i, p := range pieces {
				imgs[i] = Image{ContentType: contentType(FormatPNG), Data: p, Width: w, Height: cuts[i].Y1 - cuts[i].Y0,
					RowSigs: hs.sigs[i], RowExact: hs.exact[i], colours: &hs.colours[i]}
			}
			imgs[0].Preview = hs.preview.Image()
		} else if !errors.Is(err, pngcut.ErrUnsupported) {
			return nil, 0, newError(CodeInternal, true, err, "cut the captured region")
		}
	}
	if imgs == nil {
		if imgs, err = c.decodeAndCut(data, cuts); err != nil {
			return nil, 0, err
		}
	}
	c.place(imgs, rects)
	return imgs, time.Since(start), nil
}

// decodeAndCut decodes the captured region and encodes each piece of it.
func (c capturer) decodeAndCut(data []byte, cuts []pngcut.Range) ([]Image, error) {
	src, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, newError(CodeInternal, true, err, "decode the captured region")
	}
	sub, ok := src.(interface {
		SubImage(image.Rectangle) image.Image
	})
	if !ok {
		return nil, newError(CodeInternal, true, nil, "decoded image %T cannot be cut", src)
	}
	b := src.Bounds()
	imgs := make([]Image, 0, len(cuts))
	for _, r := range cuts {
		piece := sub.SubImage(image.Rect(b.Min.X, b.Min.Y+r.Y0, b.Max.X, b.Min.Y+r.Y1))
		enc, err := encode(piece, c.format, c.quality)
		if err != nil {
			return nil, newError(CodeInternal, true, err, "encode segment")
		}
		img := Image{ContentType: contentType(c.format), Data: enc, Width: b.Dx(), Height: r.Y1 - r.Y0}
		if c.format == FormatPNG { // lossless: the decoded piece has the stored pixels
			img.RowSigs, img.RowExact = snapdiff.RowHashes(piece)
			img.colours = sampleImage(piece)
		}
		imgs = append(imgs, img)
	}
	return imgs, nil
}

// place records where each of imgs (one per rect) starts in the captured area.
func (c capturer) place(imgs []Image, rects []Rect) {
	for i := range imgs {
		imgs[i].Y, imgs[i].YCSS = devicePx(rects[i].Y, c.dsf), rects[i].Y
	}
}

// rowHasher computes the row hashes of the pieces' rows as pngcut hands them over, and
// counts the colours of blank's sample of each piece (blank.go) from the same rows.
type rowHasher struct {
	cuts        []pngcut.Range
	sigs, exact [][]uint64
	colours     []colourCounts
	stepX       int
	rgba        []byte            // an RGB row widened to RGBA
	k           int               // the cut being hashed
	preview     *thumbnail.Scaler // the first cut's preview, when asked for
}

func newRowHasher(w int, cuts []pngcut.Range, preview bool) *rowHasher {
	h := &rowHasher{cuts: cuts, sigs: make([][]uint64, len(cuts)), exact: make([][]uint64, len(cuts)),
		colours: make([]colourCounts, len(cuts)), rgba: make([]byte, 4*w)}
	if preview && len(cuts) > 0 {
		h.preview = thumbnail.NewScaler(w, cuts[0].Y1-cuts[0].Y0)
	}
	h.stepX, _ = sampleSteps(w, 1)
	for i, c := range cuts {
		h.sigs[i], h.exact[i] = make([]uint64, 0, c.Y1-c.Y0), make([]uint64, 0, c.Y1-c.Y0)
	}
	return h
}

// row hashes row y (pngcut.RowFunc): RGBA rows as they are, RGB rows with alpha 255 (what
// image/png decodes them to).
func (h *rowHasher) row(y int, row []byte, bpp int) {
	for h.k < len(h.cuts) && y >= h.cuts[h.k].Y1 {
		h.k++
	}
	if h.k == len(h.cuts) || y < h.cuts[h.k].Y0 {
		return
	}
	if h.k == 0 {
		h.preview.Row(y-h.cuts[0].Y0, row, bpp)
	}
	if bpp == 3 {
		px := h.rgba[:len(row)/3*4]
		for i, j := 0, 0; i+3 <= len(row); i, j = i+3, j+4 {
			px[j], px[j+1], px[j+2], px[j+3] = row[i], row[i+1], row[i+2], 255
		}
		row = px
	}
	h.sigs[h.k] = append(h.sigs[h.k], snapdiff.RowSignature(row))
	h.exact[h.k] = append(h.exact[h.k], snapdiff.RowExact(row))
	c := h.cuts[h.k]
	if _, stepY := sampleSteps(1, c.Y1-c.Y0); (y-c.Y0)%stepY == 0 {
		h.colours[h.k].addRow(row, h.stepX)
	}
}

// previewOf is the thumbnail-sized copy of a decoded PNG (Image.Preview): nil for layouts
// other than NRGBA and opaque RGBA (what PNG decodes to), which the worker decodes itself.
func previewOf(m image.Image) *image.RGBA {
	var pix []byte
	var stride int
	switch m := m.(type) {
	case *image.NRGBA:
		pix, stride = m.Pix, m.Stride
	case *image.RGBA:
		if !m.Opaque() {
			return nil
		}
		pix, stride = m.Pix, m.Stride
	default:
		return nil
	}
	b := m.Bounds()
	s := thumbnail.NewScaler(b.Dx(), b.Dy())
	for y := range b.Dy() {
		s.Row(y, pix[y*stride:y*stride+4*b.Dx()], 4)
	}
	return s.Image()
}

var pngEncoder = png.Encoder{CompressionLevel: png.BestSpeed}

func encode(img image.Image, format string, quality int) ([]byte, error) {
	var buf bytes.Buffer
	var err error
	switch format {
	case FormatJPEG:
		if quality <= 0 {
			quality = DefaultJPEGQuality
		}
		err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: quality})
	case FormatPNG:
		err = pngEncoder.Encode(&buf, img)
	default:
		err = fmt.Errorf("cannot encode %s in Go", format)
	}
	return buf.Bytes(), err
}

// checkImage refuses an empty image or one whose header does not say the expected size:
// Chromium returns empty images with no error past its encoders' limits.
func checkImage(data []byte, format string, wantW, wantH int) error {
	if len(data) == 0 {
		return newError(CodeInternal, true, nil, "chromium returned an empty %s image (%dx%d px expected)", format, wantW, wantH)
	}
	cfg, got, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return newError(CodeInternal, true, err, "chromium returned an unreadable %s image", format)
	}
	if want := map[string]string{FormatPNG: "png", FormatJPEG: "jpeg", FormatWebP: "webp"}[format]; got != want {
		return newError(CodeInternal, true, nil, "chromium returned a %s image, want %s", got, want)
	}
	if cfg.Width != wantW || cfg.Height != wantH {
		return newError(CodeInternal, true, nil, "chromium returned a %dx%d px image, want %dx%d", cfg.Width, cfg.Height, wantW, wantH)
	}
	return nil
}

// Shoot captures an already loaded page exactly as Capture would (same modes, naming, size
// checks and budget: req.Limits), without navigation, waits or isolation. It exists for benchmarks and tools that
// drive their own rod page; the viewport must already be set to req.Viewport.
func Shoot(ctx context.Context, p *rod.Page, req Request, pageHeight int, callTimeout time.Duration) ([]Image, Segments, error) {
	if callTimeout <= 0 {
		callTimeout = DefaultCallTimeout
	}
	s, err := shoot(ctx, p, req, pageHeight, newBudget(req.Limits, nil), callTimeout)
	return s.images, s.segments, err
}
