package discover

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FetchPage does not follow redirects, reads HTML up to the byte bound and no other body,
// and reports a refused connection as unreachable.
func TestFetchPage(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/", http.StatusMovedPermanently)
		case "/pdf":
			w.Header().Set("Content-Type", "application/pdf")
			w.Write([]byte(strings.Repeat("%", 1000))) //nolint:errcheck
		default:
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(strings.Repeat("<p>", 1000))) //nolint:errcheck
		}
	}))
	defer srv.Close()
	r := &Reader{Client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	ctx := context.Background()
	if st, loc, _, body, err := r.FetchPage(ctx, srv.URL+"/moved", 100); err != nil || st != 301 || loc != "/" || body != nil {
		t.Errorf("redirect: %d %q %d bytes %v", st, loc, len(body), err)
	}
	if st, _, ct, body, err := r.FetchPage(ctx, srv.URL+"/pdf", 100); err != nil || st != 200 || ct != "application/pdf" || body != nil {
		t.Errorf("pdf: %d %q %d bytes %v", st, ct, len(body), err)
	}
	if st, _, _, body, err := r.FetchPage(ctx, srv.URL+"/", 100); err != nil || st != 200 || len(body) != 100 {
		t.Errorf("html: %d, %d bytes %v; want 100 bytes", st, len(body), err)
	}
	srv.Close()
	var e *Error
	if _, _, _, _, err := r.FetchPage(ctx, srv.URL+"/", 100); !errors.As(err, &e) || e.Problem != ProblemUnreachable {
		t.Errorf("closed server: %v", err)
	}
}
