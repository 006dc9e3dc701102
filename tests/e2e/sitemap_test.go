package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/snapq/snapq/internal/testenv"
)

func gzipBytes(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s)) //nolint:errcheck
	w.Close()
	return b.Bytes()
}

func sitemapXML(root string, locs []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?><%s xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`, root)
	item := map[string]string{"urlset": "url", "sitemapindex": "sitemap"}[root]
	for _, l := range locs {
		fmt.Fprintf(&b, "<%s><loc>%s</loc></%s>", item, l, item)
	}
	fmt.Fprintf(&b, "</%s>", root)
	return b.String()
}

// A sitemap index and two gzip sitemaps listing 120 URLs, some of them the same page
// written differently, become one batch of the 100 unique pages, read by the api through
// the egress guard (a sitemap on an address the guard denies is refused, naming it).
func TestBatchFromSitemap(t *testing.T) {
	t.Parallel()
	files := map[string][]byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, ok := files[r.URL.Path]; ok {
			w.Write(b) //nolint:errcheck
			return
		}
		if strings.HasPrefix(r.URL.Path, "/p/") {
			fmt.Fprintf(w, "<!doctype html><title>%s</title><p>%s", r.URL.Path, r.URL.Path)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	base := srv.URL // http://127.0.0.1:port
	host := strings.TrimPrefix(base, "http://")

	var a, b []string
	for i := range 70 { // pages 0-69
		a = append(a, fmt.Sprintf("%s/p/%d", base, i))
	}
	for i := 70; i < 100; i++ { // pages 70-99
		b = append(b, fmt.Sprintf("%s/p/%d", base, i))
	}
	for i := range 20 { // 20 more entries naming pages already listed
		switch i % 3 {
		case 0:
			b = append(b, fmt.Sprintf("%s/p/%d", base, i))
		case 1:
			b = append(b, fmt.Sprintf("%s/p/%d#section", base, i))
		default:
			b = append(b, fmt.Sprintf("HTTP://%s/p/%d", strings.ToUpper(host), i+50))
		}
	}
	if len(a)+len(b) != 120 {
		t.Fatalf("fixture lists %d URLs, want 120", len(a)+len(b))
	}
	files["/sitemap_index.xml"] = []byte(sitemapXML("sitemapindex", []string{base + "/sitemap-a.xml.gz", base + "/sitemap-b.xml.gz"}))
	files["/sitemap-a.xml.gz"] = gzipBytes(sitemapXML("urlset", a))
	files["/sitemap-b.xml.gz"] = gzipBytes(sitemapXML("urlset", b))
	files["/robots.txt"] = []byte("User-agent: *\nAllow: /\nSitemap: " + base + "/sitemap_index.xml\n")
	files["/broken.xml"] = []byte(`<urlset><url><loc>` + base + `/p/1</loc></url>`)

	denied, err := net.Listen("tcp", "127.0.0.2:0") // the guard allows only 127.0.0.1 here
	if err != nil {
		testenv.Unavailable(t, "a listener on 127.0.0.2", err)
	}
	deniedSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write(files["/sitemap_index.xml"]) //nolint:errcheck
	})}
	go deniedSrv.Serve(denied) //nolint:errcheck
	t.Cleanup(func() { deniedSrv.Close() })

	s := sharedStack(t)

	for _, start := range []string{"/sitemap_index.xml", "/robots.txt"} {
		var got batchResp
		if code := s.do("POST", "/v1/batches", map[string]any{"sitemap": base + start}, &got); code != http.StatusAccepted {
			t.Fatalf("%s: status %d", start, code)
		}
		seen := map[string]bool{}
		for _, j := range got.Jobs {
			if seen[j.URL] {
				t.Errorf("%s: %s twice", start, j.URL)
			}
			seen[j.URL] = true
		}
		if len(got.Jobs) != 100 || got.Total != 100 || !seen[base+"/p/0"] || !seen[base+"/p/99"] {
			t.Errorf("%s: %d jobs (total %d), want the 100 unique pages", start, len(got.Jobs), got.Total)
		}
		s.do("POST", "/v1/batches/"+got.ID+"/cancel", nil, nil) // the captures are not what this test is about
	}

	var limited batchResp
	s.do("POST", "/v1/batches", map[string]any{"sitemap": base + "/sitemap_index.xml", "limit": 5,
		"include": []string{"/p/7*"}, "exclude": []string{"*/p/7"}}, &limited)
	var urls []string
	for _, j := range limited.Jobs {
		urls = append(urls, strings.TrimPrefix(j.URL, base))
	}
	if strings.Join(urls, " ") != "/p/70 /p/71 /p/72 /p/73 /p/74" {
		t.Errorf("limit/include/exclude: %v", urls)
	}
	s.do("POST", "/v1/batches/"+limited.ID+"/cancel", nil, nil)

	// The CLI hands the sitemap to the server rather than reading it itself.
	snapqCLI(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := s.runCLI(ctx, "--json", "capture", "--sitemap", base+"/robots.txt", "--limit", "3", "--exclude", "/p/0")
	var cliBatch batchResp
	if err := json.Unmarshal([]byte(res.stdout), &cliBatch); res.code != 0 || err != nil || cliBatch.Total != 3 {
		t.Errorf("snapq capture --sitemap: exit %d, total %d (%v)\nstdout: %s\nstderr: %s", res.code, cliBatch.Total, err, res.stdout, res.stderr)
	} else {
		s.do("POST", "/v1/batches/"+cliBatch.ID+"/cancel", nil, nil)
	}

	for _, tt := range []struct{ url, code, says string }{
		{base + "/broken.xml", "invalid_sitemap", "not well-formed XML"},
		{base + "/missing.xml", "sitemap_unreachable", "HTTP 404"},
		{"http://" + denied.Addr().String() + "/sitemap.xml", "sitemap_unreachable", "egress"},
	} {
		var bad errResp
		if code := s.do("POST", "/v1/batches", map[string]any{"sitemap": tt.url}, &bad); code != http.StatusBadRequest {
			t.Fatalf("%s: status %d, want 400", tt.url, code)
		}
		if bad.Error.Field != "sitemap" || !strings.Contains(bad.Error.Message, tt.says) {
			t.Errorf("%s: error %+v, want field sitemap saying %q", tt.url, bad.Error, tt.says)
		}
	}
}
