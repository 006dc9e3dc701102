package discover

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func gz(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s)) //nolint:errcheck
	w.Close()
	return b.Bytes()
}

func urlset(locs ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for _, l := range locs {
		fmt.Fprintf(&b, "<url><loc>%s</loc><lastmod>2026-01-01</lastmod></url>", l)
	}
	b.WriteString("</urlset>")
	return b.String()
}

func index(locs ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for _, l := range locs {
		fmt.Fprintf(&b, "<sitemap><loc>%s</loc></sitemap>", l)
	}
	b.WriteString("</sitemapindex>")
	return b.String()
}

func site(t *testing.T, files map[string][]byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved.xml" {
			http.Redirect(w, r, "/index.xml", http.StatusMovedPermanently)
			return
		}
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b) //nolint:errcheck
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func read(t *testing.T, u string, lim Limits, max int) ([]string, error) {
	t.Helper()
	r := &Reader{Client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, Limits: lim}
	var got []string
	err := r.Read(context.Background(), u, func(p string) bool {
		got = append(got, p)
		return max > 0 && len(got) >= max
	})
	return got, err
}

func TestReadIndexGzipRobotsRedirect(t *testing.T) {
	t.Parallel()
	files := map[string][]byte{}
	base := site(t, files)
	files["/index.xml"] = []byte(index(base+"/a.xml.gz", "/b.xml.gz", base+"/a.xml.gz"))
	files["/a.xml.gz"] = gz(urlset(base+"/p1", base+"/p2"))
	files["/b.xml.gz"] = gz(urlset(base+"/p2", "/p3", base+"/img"))
	files["/robots.txt"] = []byte("User-agent: *\nDisallow:\nsitemap: " + base + "/moved.xml\n")

	for _, start := range []string{"/index.xml", "/robots.txt", "/moved.xml"} {
		got, err := read(t, base+start, Limits{}, 0)
		if err != nil {
			t.Fatalf("%s: %v", start, err)
		}
		want := []string{base + "/p1", base + "/p2", base + "/p2", base + "/p3", base + "/img"}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: got %v, want %v (a repeated sitemap file is read once; pages are not deduplicated here)", start, got, want)
		}
	}
	if got, _ := read(t, base+"/index.xml", Limits{}, 3); len(got) != 3 {
		t.Errorf("stop after 3: got %d", len(got))
	}
}

func TestReadRefusesWithTheProblem(t *testing.T) {
	t.Parallel()
	files := map[string][]byte{}
	base := site(t, files)
	files["/broken.xml"] = []byte(`<urlset><url><loc>x</loc></url>`)
	files["/html.xml"] = []byte(`<html><body>not a sitemap</body></html>`)
	files["/badgz.xml.gz"] = append([]byte{0x1f, 0x8b}, []byte("garbage")...)
	files["/deep0.xml"] = []byte(index(base + "/deep1.xml"))
	files["/deep1.xml"] = []byte(index(base + "/deep2.xml"))
	files["/deep2.xml"] = []byte(index(base + "/deep3.xml"))
	files["/big.xml"] = []byte(urlset(strings.Repeat("x", 2000)))
	files["/norobots.txt"] = []byte("User-agent: *\n")
	files["/robots.txt"] = []byte("User-agent: *\n")
	for _, tt := range []struct {
		path, problem, reason string
		lim                   Limits
	}{
		{"/broken.xml", ProblemMalformed, "not well-formed XML", Limits{}},
		{"/html.xml", ProblemMalformed, "root element is <html>", Limits{}},
		{"/badgz.xml.gz", ProblemMalformed, "gzip", Limits{}},
		{"/deep0.xml", ProblemTooLarge, "deeper than 2", Limits{}},
		{"/big.xml", ProblemTooLarge, "byte limit", Limits{MaxFileBytes: 1000}},
		{"/missing.xml", ProblemUnreachable, "HTTP 404", Limits{}},
		{"/robots.txt", ProblemMalformed, "no Sitemap: lines", Limits{}},
	} {
		_, err := read(t, base+tt.path, tt.lim, 0)
		var e *Error
		if !errors.As(err, &e) || e.Problem != tt.problem || !strings.Contains(e.Reason, tt.reason) {
			t.Errorf("%s: error %v, want %s containing %q", tt.path, err, tt.problem, tt.reason)
		}
	}
}

// A gzip bomb (about 50 MiB of XML in a small .xml.gz) is refused as too large after the
// per-file inflation cap, without inflating the rest: fast, and never the whole file.
func TestReadGzipBombStopsAtInflationCap(t *testing.T) {
	t.Parallel()
	files := map[string][]byte{}
	base := site(t, files)
	entry := "<url><loc>" + base + "/same-page</loc></url>"
	var raw bytes.Buffer
	raw.WriteString(`<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for raw.Len() < 50<<20-len(entry)-100 {
		raw.WriteString(entry)
	}
	raw.WriteString("</urlset>")
	files["/bomb.xml.gz"] = gz(raw.String())
	t.Logf("bomb: %d bytes of gzip, %d inflated", len(files["/bomb.xml.gz"]), raw.Len())
	start := time.Now()
	n := 0
	r := &Reader{Client: http.DefaultClient}
	err := r.Read(context.Background(), base+"/bomb.xml.gz", func(string) bool { n++; return false })
	var e *Error
	if !errors.As(err, &e) || e.Problem != ProblemTooLarge {
		t.Fatalf("bomb: %v after %d entries, want %s", err, n, ProblemTooLarge)
	}
	if n > DefaultMaxEntries {
		t.Fatalf("%d entries looked at, past the cap", n)
	}
	t.Logf("bomb refused after %d entries in %s: %v", n, time.Since(start).Round(time.Millisecond), err)
}

// Reading stops at the caller's limit: an endless sitemap is read no further than the
// entries asked for (the server sees the connection close), not to the byte cap.
func TestReadStopsAtLimitWithoutReadingTheRest(t *testing.T) {
	t.Parallel()
	written := make(chan int, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := 0
		defer func() { written <- n }()
		fmt.Fprint(w, `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
		for ; n < 2_000_000; n++ {
			if _, err := fmt.Fprintf(w, "<url><loc>http://%s/p/%d</loc></url>", r.Host, n); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	got, err := read(t, srv.URL+"/endless.xml", Limits{}, 10)
	if err != nil || len(got) != 10 {
		t.Fatalf("got %d pages, %v; want 10", len(got), err)
	}
	select {
	case n := <-written:
		if n > 200_000 {
			t.Fatalf("the server wrote %d entries for a read of 10", n)
		}
		t.Logf("server wrote %d entries before the reader hung up", n)
	case <-time.After(10 * time.Second):
		t.Fatal("the server is still writing 10 s after the read returned")
	}
}
