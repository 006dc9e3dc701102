package capture

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// wideSite serves a page with one element 20,000 CSS px wide.
func wideSite(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><html><head><style>html,body{margin:0}
			#wide{width:20000px;height:3000px;background:linear-gradient(90deg,#f00,#00f)}</style></head>
			<body><div id="wide"></div></body></html>`))
	})) // 127.0.0.1
	t.Cleanup(srv.Close)
	return srv
}

func TestElementTooWide(t *testing.T) {
	b := sharedBrowser(t)
	srv := wideSite(t)
	for _, tc := range []struct {
		name string
		sc   Screenshot
		dsf  float64
	}{
		{"segments", Screenshot{Format: FormatPNG, Selector: "#wide"}, 1},
		{"full at scale 2", Screenshot{Mode: ModeFull, Format: FormatPNG, Selector: "#wide"}, 2},
		{"viewport jpeg", Screenshot{Mode: ModeViewport, Format: FormatJPEG, Selector: "#wide"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := capture(t, b, Request{URL: srv.URL, Name: "wide",
				Viewport: Viewport{Width: 1280, Height: 720, DeviceScaleFactor: tc.dsf}, Screenshot: tc.sc})
			runtime.ReadMemStats(&after)
			ce := wantCode(t, err, CodeTooLargeCapture, false)
			if !strings.Contains(ce.Message, "element is") || !strings.Contains(ce.Message, "16384 px limit") {
				t.Errorf("message = %q, want the element's width and the limit", ce.Message)
			}
			// Refused before any capture: nothing near one image's bytes was allocated.
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 200<<20 {
				t.Errorf("the test process allocated %d MiB, want < 200 MiB", grew>>20)
			}
		})
	}
}

func TestCaptureBudget(t *testing.T) {
	b := sharedBrowser(t)
	vp := Viewport{Width: 1280, Height: 720, DeviceScaleFactor: 1}
	onePiece := int64(1280 * 720)
	tall := fixtures.URL + "/page?h=10000" // 14 viewports

	t.Run("segments stop at the job's pixels, truncated", func(t *testing.T) {
		for _, format := range []string{FormatPNG, FormatWebP} {
			res := mustCapture(t, b, Request{URL: tall, Name: "tall", Viewport: vp,
				Screenshot: Screenshot{Format: format, MaxSegments: 10}, Limits: Limits{JobPixels: 3*onePiece + 1}})
			diff(t, format+" segments", Segments{Total: 14, Captured: 3, Truncated: true}, res.Segments)
			diff(t, format+" sizes", repeat(size{1280, 720}, 3), sizes(res.Images))
			diff(t, format+" names", numbered("tall", extension(format), 3), names(res.Images))
		}
	})
	t.Run("not even one segment fits", func(t *testing.T) {
		_, err := capture(t, b, Request{URL: tall, Viewport: vp, Limits: Limits{JobPixels: onePiece - 1}})
		wantCode(t, err, CodeTooLargeCapture, false)
	})
	t.Run("full page over one image's pixels", func(t *testing.T) {
		_, err := capture(t, b, Request{URL: tall, Viewport: vp, Screenshot: Screenshot{Mode: ModeFull},
			Limits: Limits{ImagePixels: 4 * onePiece}})
		ce := wantCode(t, err, CodeTooLargeCapture, false)
		if !strings.Contains(ce.Message, "1280×10000") {
			t.Errorf("message = %q, want the image's size", ce.Message)
		}
	})
	t.Run("bands stay within one image's pixels", func(t *testing.T) {
		// The PNG cut path captures bands of at most 2 pieces here instead of 14: same images.
		res := mustCapture(t, b, Request{URL: tall, Name: "tall", Viewport: vp,
			Screenshot: Screenshot{MaxSegments: 14}, Limits: Limits{ImagePixels: 2 * onePiece}})
		diff(t, "segments", Segments{Total: 14, Captured: 14}, res.Segments)
		m := decode(t, res.Images[13])
		if !near(m, 10, 5, bandColor(13), 0) {
			t.Errorf("segment 14 top = %s, want band 13 %v", pixel(m, 10, 5), bandColor(13))
		}
	})
	t.Run("segments stop at the job's bytes, truncated", func(t *testing.T) {
		full := mustCapture(t, b, Request{URL: tall, Viewport: vp, Screenshot: Screenshot{MaxSegments: 5}})
		two := int64(len(full.Images[0].Data) + len(full.Images[1].Data))
		res := mustCapture(t, b, Request{URL: tall, Viewport: vp, Screenshot: Screenshot{MaxSegments: 5},
			Limits: Limits{JobBytes: two}})
		diff(t, "segments", Segments{Total: 14, Captured: 2, Truncated: true}, res.Segments)
		_, err := capture(t, b, Request{URL: tall, Viewport: vp, Limits: Limits{JobBytes: 100}})
		wantCode(t, err, CodeTooLargeCapture, false)
	})
	t.Run("files count toward the job's bytes", func(t *testing.T) {
		res := mustCapture(t, b, Request{URL: tall, Viewport: vp, Outputs: []string{OutputHTML}})
		html := int64(len(res.Files[0].Data))
		_, err := capture(t, b, Request{URL: tall, Viewport: vp, Outputs: []string{OutputHTML}, Limits: Limits{JobBytes: html - 1}})
		wantCode(t, err, CodeTooLargeCapture, false)
	})
	t.Run("screenshot actions share the budget", func(t *testing.T) {
		shot := Action{Type: ActionScreenshot, Name: "before", Screenshot: Screenshot{Mode: ModeSegments, MaxSegments: 2}}
		res := mustCapture(t, b, Request{URL: tall, Name: "tall", Viewport: vp, Actions: []Action{shot},
			Screenshot: Screenshot{MaxSegments: 10}, Limits: Limits{JobPixels: 5 * onePiece}})
		// 2 action segments leave room for 3 of the screenshot output's.
		diff(t, "segments", Segments{Total: 14, Captured: 3, Truncated: true}, res.Segments)
		diff(t, "images", 5, len(res.Images))

		full := Action{Type: ActionScreenshot, Name: "whole", Screenshot: Screenshot{Mode: ModeFull}}
		_, err := capture(t, b, Request{URL: tall, Viewport: vp, Actions: []Action{full}, Limits: Limits{ImagePixels: 4 * onePiece}})
		ce := wantCode(t, err, CodeTooLargeCapture, false)
		if !strings.HasPrefix(ce.Message, "action 0 (screenshot): ") {
			t.Errorf("message = %q, want the action named", ce.Message)
		}
		full.Optional = true
		res = mustCapture(t, b, Request{URL: tall, Name: "tall", Viewport: vp, Actions: []Action{full},
			Screenshot: Screenshot{MaxSegments: 2}, Limits: Limits{ImagePixels: 4 * onePiece}})
		diff(t, "images without the optional action's", []string{"tall-001.png", "tall-002.png"}, names(res.Images))
	})
}
