package capture

import (
	"image/color"
	"net/http"
	"net/http/httptest"
	"testing"
)

func elementSite(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><html><head><style>html,body{margin:0;background:rgb(255,0,0)}
			#tall{position:absolute;left:50px;top:100px;width:300px;height:1700px;background:rgb(0,200,0)}
			#short{position:absolute;left:400px;top:40px;width:120px;height:200px;background:rgb(0,0,255)}
			</style></head><body><div id="tall"></div><div id="short"></div><div style="height:3000px"></div></body></html>`))
	})) // 127.0.0.1
	t.Cleanup(srv.Close)
	return srv
}

func TestElementScreenshot(t *testing.T) {
	b := sharedBrowser(t)
	srv := elementSite(t)
	for _, tc := range []struct {
		name     string
		selector string
		format   string
		dsf      float64
		want     []size
		color    color.RGBA
	}{
		{"tall element in segments", "#tall", FormatPNG, 1, []size{{300, 720}, {300, 720}, {300, 260}}, color.RGBA{0, 200, 0, 255}},
		{"tall element webp at 2x", "#tall", FormatWebP, 2, []size{{600, 1440}, {600, 1440}, {600, 520}}, color.RGBA{0, 200, 0, 255}},
		{"short element", "#short", FormatPNG, 1, []size{{120, 200}}, color.RGBA{0, 0, 255, 255}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := mustCapture(t, b, Request{URL: srv.URL, Name: "el",
				Viewport:   Viewport{Width: 800, Height: 720, DeviceScaleFactor: tc.dsf},
				Screenshot: Screenshot{Format: tc.format, Selector: tc.selector}})
			diff(t, "sizes", tc.want, sizes(res.Images))
			for _, img := range res.Images {
				m := decode(t, img)
				// Every corner is the element's colour: nothing of the red page around it.
				for _, pt := range [][2]int{{1, 1}, {img.Width - 2, 1}, {1, img.Height - 2}, {img.Width - 2, img.Height - 2}} {
					if !near(m, pt[0], pt[1], tc.color, 24) { // lossy WebP shifts colours a little
						t.Errorf("%s: pixel %v = %s, want %v", img.Name, pt, pixel(m, pt[0], pt[1]), tc.color)
					}
				}
			}
		})
	}
	t.Run("full mode", func(t *testing.T) {
		res := mustCapture(t, b, Request{URL: srv.URL, Screenshot: Screenshot{Mode: ModeFull, Selector: "#tall"}})
		diff(t, "sizes", []size{{300, 1700}}, sizes(res.Images))
	})
	t.Run("missing", func(t *testing.T) {
		_, err := capture(t, b, Request{URL: srv.URL, Screenshot: Screenshot{Selector: "#nope"}})
		wantCode(t, err, CodeSelectorNotFound, false)
	})
}
