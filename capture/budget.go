package capture

// A job's capture budget. Chromium rasterizes every Page.captureScreenshot in memory (about 4
// bytes per device pixel, plus the encoded copy Go receives), so one huge clip — a 4096×4096
// viewport at scale 4 is 268 million device pixels, over 1 GiB raw — can take a worker down.
// Every capture call is checked before it is made; the encoded bytes after.
const (
	// MaxImagePixels bounds one image, and one capture call, in device pixels (64 MP: 256 MiB
	// raw). The jobs API refuses a viewport over it; a full-page or element image over it
	// fails with CodeTooLargeCapture.
	MaxImagePixels = 64_000_000
	// MaxImageWidth bounds one image's width in device pixels: 16,384, the widest a page
	// capture can be (a 4096 CSS px viewport at scale 4). An element wider than that fails
	// with CodeTooLargeCapture.
	MaxImageWidth = 16384
	// MaxJobPixels bounds the device pixels of all screenshots of one job (the screenshot
	// output and the screenshot actions together): 200 MP.
	MaxJobPixels = 200_000_000
	// MaxJobBytes bounds the encoded bytes of all artifacts of one job (images and files):
	// 256 MiB.
	MaxJobBytes = 256 << 20
)

// CodeTooLargeCapture: an image or element over MaxImagePixels or MaxImageWidth, or a job
// whose screenshots would pass MaxJobPixels or whose artifacts would pass MaxJobBytes (not
// retryable: the page would be as large again). Segments are the exception, like
// max_segments: pieces past the budget are left out and Segments.Truncated is set; only a
// first piece that does not fit fails.
const CodeTooLargeCapture = "too_large_capture"

// Limits bound what one job may capture; zero fields take the defaults above. The jobs API
// always uses the defaults; tests and tools lower them.
type Limits struct {
	ImagePixels int64 // default MaxImagePixels
	ImageWidth  int   // default MaxImageWidth
	JobPixels   int64 // default MaxJobPixels
	JobBytes    int64 // default MaxJobBytes
}

func (l Limits) withDefaults() Limits {
	if l.ImagePixels <= 0 {
		l.ImagePixels = MaxImagePixels
	}
	if l.ImageWidth <= 0 {
		l.ImageWidth = MaxImageWidth
	}
	if l.JobPixels <= 0 {
		l.JobPixels = MaxJobPixels
	}
	if l.JobBytes <= 0 {
		l.JobBytes = MaxJobBytes
	}
	return l
}

// budget is what a job may still capture: the limits and what its artifacts already hold.
type budget struct {
	lim           Limits
	pixels, bytes int64
}

// newBudget starts from what res already holds (earlier screenshot actions, files); res may
// be nil.
func newBudget(lim Limits, res *Result) *budget {
	b := &budget{lim: lim.withDefaults()}
	if res != nil {
		for _, img := range res.Images {
			b.pixels += int64(img.Width) * int64(img.Height)
			b.bytes += int64(len(img.Data))
		}
		for _, f := range res.Files {
			b.bytes += int64(len(f.Data))
		}
	}
	return b
}

// tooLarge builds the budget's error.
func tooLarge(format string, args ...any) *Error {
	return newError(CodeTooLargeCapture, false, nil, format, args...)
}

// checkWidth refuses an area wider than an image may be, before anything is captured.
func (b *budget) checkWidth(what string, w int) *Error {
	if w > b.lim.ImageWidth {
		return tooLarge("the %s is %d device px wide, over the %d px limit of one image", what, w, b.lim.ImageWidth)
	}
	return nil
}

// fits checks an image of w×h device px before it is captured: alone and added to the job's.
func (b *budget) fits(w, h int) *Error {
	px := int64(w) * int64(h)
	if px > b.lim.ImagePixels {
		return tooLarge("one image of %d×%d device px is %d px, over the %d px limit of one image", w, h, px, b.lim.ImagePixels)
	}
	if b.pixels+px > b.lim.JobPixels {
		return tooLarge("an image of %d×%d device px would bring the job's screenshots to %d px, over the job's %d px budget",
			w, h, b.pixels+px, b.lim.JobPixels)
	}
	return nil
}

// take counts a captured image; it fails, counting nothing, when its bytes pass the job's.
func (b *budget) take(img Image) *Error {
	n := int64(len(img.Data))
	if b.bytes+n > b.lim.JobBytes {
		return tooLarge("the image %s (%d bytes) would bring the job's artifacts to %d bytes, over the job's %d MiB budget",
			img.Name, n, b.bytes+n, b.lim.JobBytes>>20)
	}
	b.pixels += int64(img.Width) * int64(img.Height)
	b.bytes += n
	return nil
}

// checkArtifacts fails a job whose artifacts (images and files) total over the byte budget.
func checkArtifacts(req Request, res *Result) *Error {
	b := newBudget(req.Limits, res)
	if b.bytes > b.lim.JobBytes {
		return tooLarge("the job's artifacts total %d bytes, over the job's %d MiB budget", b.bytes, b.lim.JobBytes>>20)
	}
	return nil
}

// keepFitting drops the pieces of plan past the job's pixel budget, like max_segments does
// (Truncated is set). Every piece is at most devW×(one viewport) device px; a first piece
// that does not fit is an error.
func (b *budget) keepFitting(plan Plan, devW int, dsf float64) (Plan, *Error) {
	spent := b.pixels
	for i, r := range plan.Rects {
		h := devicePx(r.Height, dsf)
		probe := budget{lim: b.lim, pixels: spent}
		if err := probe.fits(devW, h); err != nil {
			if i == 0 {
				return Plan{}, err
			}
			return plan.Keep(i), nil
		}
		spent += int64(devW) * int64(h)
	}
	return plan, nil
}
