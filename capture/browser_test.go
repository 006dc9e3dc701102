package capture

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// capture runs one request against b with a 30 s budget.
func capture(t *testing.T, b *Browser, req Request) (*Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return b.Capture(ctx, req)
}

func mustCapture(t *testing.T, b *Browser, req Request) *Result {
	t.Helper()
	res, err := capture(t, b, req)
	if err != nil {
		t.Fatalf("Capture(%s): %v", req.URL, err)
	}
	return res
}

func wantCode(t *testing.T, err error, code string, retryable bool) *Error {
	t.Helper()
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error = %v (%T), want *Error with code %q", err, err, code)
	}
	if ce.Code != code || ce.Retryable != retryable {
		t.Fatalf("error = %v, want code %q retryable %v", ce, code, retryable)
	}
	return ce
}

type size struct{ W, H int }

func sizes(imgs []Image) []size {
	s := make([]size, len(imgs))
	for i, img := range imgs {
		s[i] = size{img.Width, img.Height}
	}
	return s
}

func names(imgs []Image) []string {
	s := make([]string, len(imgs))
	for i, img := range imgs {
		s[i] = img.Name
	}
	return s
}

func diff[T any](t *testing.T, what string, want, got T) {
	t.Helper()
	if fmt.Sprint(want) != fmt.Sprint(got) {
		t.Errorf("%s mismatch (-want +got):\n-%v\n+%v", what, want, got)
	}
}

// saveForHumans writes an image under $SNAPQ_TEST_OUT (if set) to look at.
func saveForHumans(t *testing.T, img Image) {
	dir := os.Getenv("SNAPQ_TEST_OUT")
	if dir == "" {
		return
	}
	_ = os.MkdirAll(dir, 0o755)
	name := strings.ReplaceAll(t.Name()[len("Test"):], "/", "_") + "-" + filepath.Base(img.Name)
	if err := os.WriteFile(filepath.Join(dir, name), img.Data, 0o644); err != nil {
		t.Logf("save %s: %v", name, err)
	}
}

func TestCaptureSegments(t *testing.T) {
	b := sharedBrowser(t)
	res := mustCapture(t, b, Request{
		URL: fixtures.URL + "/page?h=2000", Name: "seg",
		Viewport: Viewport{Width: 1280, Height: 720, DeviceScaleFactor: 1},
	})
	for _, img := range res.Images {
		saveForHumans(t, img)
	}
	diff(t, "sizes", []size{{1280, 720}, {1280, 720}, {1280, 560}}, sizes(res.Images))
	diff(t, "names", []string{"seg-001.png", "seg-002.png", "seg-003.png"}, names(res.Images))
	diff(t, "segments", Segments{Total: 3, Captured: 3}, res.Segments)
	diff(t, "status/height/title", "200 2000 page 2000", fmt.Sprintf("%d %d %s", res.HTTPStatus, res.PageHeight, res.Title))
	t.Logf("timings %v", res.Timings)
	// Every stage a plain job runs has its own key (the values are times: any, even 0).
	var stages []string
	for k := range res.Timings {
		stages = append(stages, k)
	}
	slices.Sort(stages)
	diff(t, "timing stages", []string{"actions", "auth", "capture", "encode", "inspect", "navigate", "prepare", "quality",
		"reset", "slot", "tab", "total", "wait"}, stages)
	if len(res.Images) != 3 {
		t.FailNow()
	}
	first, second, third := decode(t, res.Images[0]), decode(t, res.Images[1]), decode(t, res.Images[2])
	if !near(first, 10, 5, red, 0) || !near(first, 640, 35, red, 0) {
		t.Errorf("segment 1 top = %s, want the red fixed header", pixel(first, 10, 5))
	}
	if !near(first, 10, 100, bandColor(0), 0) {
		t.Errorf("segment 1 at y=100 = %s, want band 0 %v", pixel(first, 10, 100), bandColor(0))
	}
	if !near(second, 10, 5, bandColor(1), 0) {
		t.Errorf("segment 2 top = %s, want band 1 %v (no repeated header)", pixel(second, 10, 5), bandColor(1))
	}
	if !near(third, 10, 5, bandColor(2), 0) || !near(third, 10, 559, bandColor(2), 0) {
		t.Errorf("segment 3 = %s..%s, want band 2 %v", pixel(third, 10, 5), pixel(third, 10, 559), bandColor(2))
	}
	// The first segment's preview, made from the rows the cutter had in hand: a quarter of it,
	// the fixed header on top and band 0 below.
	pv := res.Images[0].Preview
	if pv == nil || pv.Rect.Dx() != 320 || pv.Rect.Dy() != 180 {
		t.Fatalf("first segment's preview %v, want 320x180", pv)
	}
	if !near(pv, 2, 1, red, 2) || !near(pv, 2, 25, bandColor(0), 2) {
		t.Errorf("preview = %s at the top, %s at y=25; want the red header over band 0 %v", pixel(pv, 2, 1), pixel(pv, 2, 25), bandColor(0))
	}
	if res.Images[1].Preview != nil {
		t.Error("a preview of the second segment too")
	}
}

func TestCaptureShapes(t *testing.T) {
	b := sharedBrowser(t)
	page := func(h int) string { return fmt.Sprintf("%s/page?h=%d", fixtures.URL, h) }
	vp := Viewport{Width: 1280, Height: 720, DeviceScaleFactor: 1}
	tests := []struct {
		name      string
		req       Request
		sizes     []size
		names     []string
		segments  Segments
		checkBand bool // sample each image's middle for its band colour
	}{
		{name: "device scale factor 2 doubles pixels",
			req:   Request{URL: page(2000), Name: "x2", Viewport: Viewport{Width: 1280, Height: 720, DeviceScaleFactor: 2}},
			sizes: []size{{2560, 1440}, {2560, 1440}, {2560, 1120}}, names: []string{"x2-001.png", "x2-002.png", "x2-003.png"},
			segments: Segments{Total: 3, Captured: 3}, checkBand: true},
		{name: "jpeg segments",
			req:   Request{URL: page(2000), Name: "j", Viewport: vp, Screenshot: Screenshot{Format: FormatJPEG}},
			sizes: []size{{1280, 720}, {1280, 720}, {1280, 560}}, names: []string{"j-001.jpg", "j-002.jpg", "j-003.jpg"},
			segments: Segments{Total: 3, Captured: 3}, checkBand: true},
		{name: "webp segments",
			req:   Request{URL: page(2000), Name: "w", Viewport: vp, Screenshot: Screenshot{Format: FormatWebP, Quality: 90}},
			sizes: []size{{1280, 720}, {1280, 720}, {1280, 560}}, names: []string{"w-001.webp", "w-002.webp", "w-003.webp"},
			segments: Segments{Total: 3, Captured: 3}, checkBand: true},
		{name: "page shorter than the viewport gives one unnumbered screen",
			req:   Request{URL: page(300), Name: "short", Viewport: vp},
			sizes: []size{{1280, 720}}, names: []string{"short.png"}, segments: Segments{Total: 1, Captured: 1}},
		{name: "exactly two viewports",
			req:   Request{URL: page(1440), Name: "two", Viewport: vp},
			sizes: []size{{1280, 720}, {1280, 720}}, names: []string{"two-001.png", "two-002.png"},
			segments: Segments{Total: 2, Captured: 2}, checkBand: true},
		{name: "one pixel over two viewports",
			req:   Request{URL: page(1441), Name: "over", Viewport: vp},
			sizes: []size{{1280, 720}, {1280, 720}, {1280, 1}}, names: []string{"over-001.png", "over-002.png", "over-003.png"},
			segments: Segments{Total: 3, Captured: 3}},
		{name: "very tall page is truncated at max segments",
			req:   Request{URL: page(40000), Name: "tall", Viewport: vp, Screenshot: Screenshot{MaxSegments: 10}},
			sizes: repeat(size{1280, 720}, 10), names: numbered("tall", "png", 10),
			segments: Segments{Total: 56, Captured: 10, Truncated: true}, checkBand: true},
		{name: "segments over 16000 device px are captured in chunks",
			req:   Request{URL: page(40000), Name: "chunk", Viewport: Viewport{Width: 400, Height: 720, DeviceScaleFactor: 2}, Screenshot: Screenshot{MaxSegments: 25}},
			sizes: repeat(size{800, 1440}, 25), names: numbered("chunk", "png", 25),
			segments: Segments{Total: 56, Captured: 25, Truncated: true}, checkBand: true},
		{name: "full page",
			req:   Request{URL: page(2000), Name: "full", Viewport: vp, Screenshot: Screenshot{Mode: ModeFull}},
			sizes: []size{{1280, 2000}}, names: []string{"full.png"}, segments: Segments{Total: 1, Captured: 1}},
		{name: "full page jpeg",
			req:   Request{URL: page(2000), Name: "fullj", Viewport: vp, Screenshot: Screenshot{Mode: ModeFull, Format: FormatJPEG, Quality: 70}},
			sizes: []size{{1280, 2000}}, names: []string{"fullj.jpg"}, segments: Segments{Total: 1, Captured: 1}},
		{name: "viewport",
			req:   Request{URL: page(2000), Name: "vp", Viewport: vp, Screenshot: Screenshot{Mode: ModeViewport}},
			sizes: []size{{1280, 720}}, names: []string{"vp.png"}, segments: Segments{Total: 1, Captured: 1}},
		{name: "fractional device scale factor",
			req: Request{URL: page(1000), Name: "f", Viewport: Viewport{Width: 1001, Height: 333, DeviceScaleFactor: 1.5}},
			// Pieces are cut from one capture so they tile it exactly: 0|500|999|1499|1500.
			sizes: []size{{1502, 500}, {1502, 499}, {1502, 500}, {1502, 1}}, names: numbered("f", "png", 4),
			segments: Segments{Total: 4, Captured: 4}},
		{name: "fractional device scale factor webp",
			req:   Request{URL: page(1000), Name: "f", Viewport: Viewport{Width: 1001, Height: 333, DeviceScaleFactor: 1.5}, Screenshot: Screenshot{Format: FormatWebP}},
			sizes: []size{{1502, 500}, {1502, 500}, {1502, 500}, {1502, 2}}, names: numbered("f", "webp", 4),
			segments: Segments{Total: 4, Captured: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := mustCapture(t, b, tt.req)
			diff(t, "sizes", tt.sizes, sizes(res.Images))
			diff(t, "names", tt.names, names(res.Images))
			diff(t, "segments", tt.segments, res.Segments)
			for i, img := range res.Images {
				if i == 0 {
					saveForHumans(t, img)
				}
				if img.Index != i+1 {
					t.Errorf("%s: Index = %d, want %d", img.Name, img.Index, i+1)
				}
				m := decode(t, img)
				tol := 0
				switch img.ContentType {
				case "image/jpeg":
					tol = 12
				case "image/webp":
					tol = 24 // lossy, 4:2:0 chroma
				}
				if i == 0 && !near(m, 5, 5, red, tol) {
					t.Errorf("%s: top-left = %s, want the red header", img.Name, pixel(m, 5, 5))
				}
				if i > 0 && near(m, 5, 5, red, 40) {
					t.Errorf("%s: the fixed header repeats at the top of segment %d", img.Name, i+1)
				}
				if tt.checkBand && !near(m, m.Bounds().Dx()/2, m.Bounds().Dy()/2, bandColor(i), tol) {
					t.Errorf("%s: middle = %s, want band %d %v", img.Name, pixel(m, m.Bounds().Dx()/2, m.Bounds().Dy()/2), i, bandColor(i))
				}
			}
		})
	}
}

func repeat[T any](v T, n int) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = v
	}
	return s
}

func numbered(name, ext string, n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprintf("%s-%03d.%s", name, i+1, ext)
	}
	return s
}

func TestCaptureOutcomes(t *testing.T) {
	b := sharedBrowser(t)
	t.Run("404 with a body is a result", func(t *testing.T) {
		t.Parallel()
		res := mustCapture(t, b, Request{URL: fixtures.URL + "/notfound", Name: "nf"})
		diff(t, "status/title", "404 gone", fmt.Sprintf("%d %s", res.HTTPStatus, res.Title))
		diff(t, "sizes", []size{{1280, 720}}, sizes(res.Images))
		decode(t, res.Images[0])
	})
	t.Run("500 with an empty body is a result", func(t *testing.T) {
		t.Parallel()
		res := mustCapture(t, b, Request{URL: fixtures.URL + "/empty500", Name: "e"})
		for _, img := range res.Images {
			saveForHumans(t, img)
		}
		diff(t, "status", 500, res.HTTPStatus)
		diff(t, "final URL", fixtures.URL+"/empty500", res.FinalURL)
		if len(res.Images) != 1 {
			t.Fatalf("got %d images, want 1", len(res.Images))
		}
		decode(t, res.Images[0])
	})
	t.Run("redirect reports the final URL", func(t *testing.T) {
		t.Parallel()
		res := mustCapture(t, b, Request{URL: fixtures.URL + "/redirect", Name: "r"})
		diff(t, "status/final", "200 "+fixtures.URL+"/page?h=100", fmt.Sprintf("%d %s", res.HTTPStatus, res.FinalURL))
	})
	t.Run("refused connection", func(t *testing.T) {
		t.Parallel()
		_, err := capture(t, b, Request{URL: "http://" + closedPort(t) + "/", Name: "c"})
		wantCode(t, err, CodeConnectionFailed, true)
	})
	t.Run("full webp too tall", func(t *testing.T) {
		t.Parallel()
		_, err := capture(t, b, Request{URL: fixtures.URL + "/page?h=20000", Name: "w",
			Screenshot: Screenshot{Mode: ModeFull, Format: FormatWebP}})
		ce := wantCode(t, err, CodeTooTall, false)
		if !strings.Contains(ce.Message, `"segments"`) {
			t.Errorf("message %q does not point to mode segments", ce.Message)
		}
	})
	t.Run("selector timeout", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		_, err := capture(t, b, Request{URL: fixtures.URL + "/hidden", Name: "s",
			Wait: Wait{Selector: "#x", SelectorTimeout: 300 * time.Millisecond}})
		wantCode(t, err, CodeSelectorTimeout, false)
		// Far below the 30 s default wait, with room for a loaded machine
		// (a parallel subtest took 6.1 s at load average 33).
		if d := time.Since(start); d > 12*time.Second {
			t.Errorf("took %s for a 300ms selector timeout", d)
		}
	})
	t.Run("selector timeout with best attempt", func(t *testing.T) {
		t.Parallel()
		res := mustCapture(t, b, Request{URL: fixtures.URL + "/hidden", Name: "s",
			Wait: Wait{Selector: "#x", SelectorTimeout: 300 * time.Millisecond, BestAttempt: true}})
		if len(res.WaitErrors) != 1 || len(res.Images) != 1 {
			t.Errorf("WaitErrors = %q, %d images; want one wait error and the capture", res.WaitErrors, len(res.Images))
		}
	})
	t.Run("invalid selector", func(t *testing.T) {
		t.Parallel()
		_, err := capture(t, b, Request{URL: fixtures.URL + "/hidden", Name: "s", Wait: Wait{Selector: "#[["}})
		wantCode(t, err, CodeInvalidSelector, false)
	})
	t.Run("network idle waits for late content", func(t *testing.T) {
		t.Parallel()
		res := mustCapture(t, b, Request{URL: fixtures.URL + "/late", Name: "l", Wait: Wait{Until: UntilNetworkIdle}})
		diff(t, "title", "late", res.Title)
	})
	t.Run("visible selector", func(t *testing.T) {
		t.Parallel()
		res := mustCapture(t, b, Request{URL: fixtures.URL + "/late", Name: "l", Wait: Wait{Selector: "#late"}})
		diff(t, "title", "late", res.Title)
	})
	t.Run("deadline during navigation", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := b.Capture(ctx, Request{URL: fixtures.URL + "/slowdata", Name: "t"})
		wantCode(t, err, CodeNavigationTimeout, true)
	})
}
