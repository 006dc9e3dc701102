package capture

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// cutSite serves /length/{close,reset} and /chunked/{close,reset}: a main document whose
// body is cut short after 4 KiB by a clean close or a reset, under Content-Length or
// chunked encoding.
func cutSite(t *testing.T) *httptest.Server {
	t.Helper()
	body := `<!doctype html><html><head><title>Cut</title></head><body><h1>Figures</h1>` +
		strings.Repeat(`<p>Revenue grew in every region this quarter, and costs fell.</p>`, 60)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		how, end, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if !ok {
			http.NotFound(w, r)
			return
		}
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		bw := bufio.NewWriter(conn)
		if how == "length" {
			fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 200000\r\n\r\n%s", body)
		} else {
			fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(body), body)
		}
		_ = bw.Flush()
		time.Sleep(100 * time.Millisecond)
		if end == "reset" {
			_ = conn.(*net.TCPConn).SetLinger(0)
		}
		_ = conn.Close()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A main document cut short fails invalid_response as soon as Chromium reports it, with
// the attempt's result, instead of waiting out the budget and passing as a partial page
// (issue 26.6).
func TestCutShortDocument(t *testing.T) {
	b := sharedBrowser(t)
	srv := cutSite(t)
	for _, path := range []string{"/length/close", "/length/reset", "/chunked/close", "/chunked/reset"} {
		t.Run(path, func(t *testing.T) {
			start := time.Now()
			res, err := capture(t, b, Request{URL: srv.URL + path, Name: "cut", Timeout: 20 * time.Second,
				Screenshot: Screenshot{Mode: ModeViewport}})
			took := time.Since(start)
			if err == nil {
				t.Fatalf("succeeded after %s (partial %v, quality %+v), want invalid_response", took, res.Partial, res.Quality)
			}
			ce := wantCode(t, err, CodeInvalidResponse, true)
			if !strings.Contains(ce.Message, "cut short") || ce.Result == nil || ce.Result.HTTPStatus != 200 {
				t.Errorf("error %q with result %+v, want the cut named and the attempt's status", ce.Message, ce.Result)
			}
			if took > 10*time.Second {
				t.Errorf("failed after %s, want well within the 20 s budget", took)
			}
		})
	}
}
