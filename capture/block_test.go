package capture

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// imageSite serves /gallery, a page with 6 images (/img/0.png … /img/5.png), and counts the
// image requests it sees by path.
func imageSite(t *testing.T) (*httptest.Server, func() map[string]int) {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 4, 4))); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	hits := map[string]int{}
	mux := http.NewServeMux()
	mux.HandleFunc("/gallery", func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		b.WriteString(`<!doctype html><title>gallery</title><h1>Gallery</h1>`)
		for i := range 6 {
			fmt.Fprintf(&b, `<img src="/img/%d.png" width="100" height="100">`, i)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(b.String()))
	})
	mux.HandleFunc("/img/", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(buf.Bytes())
	})
	srv := httptest.NewServer(mux) // 127.0.0.1
	t.Cleanup(srv.Close)
	return srv, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := hits
		hits = map[string]int{}
		return out
	}
}

// One tab, so every job below runs on the same long-lived page: a job's blocking must never
// carry over to the next.
func TestBlockResources(t *testing.T) {
	b := newBrowser(t, Config{Tabs: 1})
	srv, take := imageSite(t)
	run := func(t *testing.T, outputs []string, block Block) map[string]int {
		t.Helper()
		take()
		res := mustCapture(t, b, Request{URL: srv.URL + "/gallery", Name: "g", Outputs: outputs, Block: block})
		if res.HTTPStatus != 200 || res.Title != "gallery" {
			t.Fatalf("status %d title %q", res.HTTPStatus, res.Title)
		}
		return take()
	}
	countAll := func(h map[string]int) int {
		n := 0
		for _, v := range h {
			n += v
		}
		return n
	}

	t.Run("image type blocked", func(t *testing.T) {
		if h := run(t, []string{OutputScreenshot}, Block{ResourceTypes: []string{ResourceImage}}); countAll(h) != 0 {
			t.Errorf("image requests with images blocked: %v", h)
		}
	})
	t.Run("next job on the same tab is not blocked", func(t *testing.T) {
		if h := run(t, []string{OutputScreenshot}, Block{}); countAll(h) != 6 {
			t.Errorf("image requests without blocking: %v, want 6", h)
		}
	})
	t.Run("text job with the default media block", func(t *testing.T) {
		h := run(t, []string{OutputText}, Block{ResourceTypes: []string{ResourceImage, ResourceFont, ResourceMedia}})
		if countAll(h) != 0 {
			t.Errorf("image requests: %v, want 0", h)
		}
	})
	t.Run("text job with blocking turned off", func(t *testing.T) {
		if h := run(t, []string{OutputText}, Block{ResourceTypes: []string{}}); countAll(h) != 6 {
			t.Errorf("image requests: %v, want 6", h)
		}
	})
	t.Run("url patterns", func(t *testing.T) {
		h := run(t, []string{OutputScreenshot}, Block{URLPatterns: []string{"*/img/3.png", "*/img/4.*"}})
		if countAll(h) != 4 || h["/img/3.png"] != 0 || h["/img/4.png"] != 0 {
			t.Errorf("image requests: %v, want all but 3 and 4", h)
		}
	})
	t.Run("patterns lifted for the next job", func(t *testing.T) {
		if h := run(t, []string{OutputScreenshot}, Block{}); countAll(h) != 6 {
			t.Errorf("image requests: %v, want 6", h)
		}
	})
}
