package capture

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestRemoteEndpoints(t *testing.T) {
	t.Parallel()
	got := remoteEndpoints(" http://a:9222, ,ws://b:9222/devtools/browser/x,")
	if len(got) != 2 || got[0] != "http://a:9222" || got[1] != "ws://b:9222/devtools/browser/x" {
		t.Fatalf("remoteEndpoints = %q", got)
	}
	for _, bad := range []string{"a:9222", "ftp://a", "http://"} {
		if err := (Config{RemoteURL: "http://ok:1," + bad}).Validate(); err == nil {
			t.Errorf("Validate accepted RemoteURL endpoint %q", bad)
		}
	}
}

// What an endpoint answers decides whether a job waits for another browser (unavailable,
// not the job's failure) or fails.
func TestRemoteUnavailable(t *testing.T) {
	t.Parallel()
	status := atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	tests := []struct {
		name        string
		url         string
		status      int
		unavailable bool
	}{
		{name: "overloaded pool", url: srv.URL, status: http.StatusTooManyRequests, unavailable: true},
		{name: "pool restarting", url: srv.URL, status: http.StatusServiceUnavailable, unavailable: true},
		{name: "gateway without a browser", url: srv.URL, status: http.StatusBadGateway, unavailable: true},
		{name: "refused", url: "http://" + closedPort(t), unavailable: true},
		{name: "not a CDP endpoint", url: srv.URL, status: http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status.Store(int64(tt.status))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := resolveWebSocketURL(ctx, tt.url)
			if err == nil {
				t.Fatal("resolveWebSocketURL: no error")
			}
			err = markUnavailable(err)
			if got := errors.Is(err, ErrUnavailable); got != tt.unavailable {
				t.Fatalf("%v: unavailable %v, want %v", err, got, tt.unavailable)
			}
			ce := classify(ctx, ctx, phaseSlot, err)
			want := CodeInternal
			if tt.unavailable {
				want = CodeBrowserUnavailable
			}
			if ce.Code != want || !ce.Retryable {
				t.Fatalf("classify: %s (retryable %v), want %s retryable", ce.Code, ce.Retryable, want)
			}
		})
	}
}

// Several endpoints: every slot has a connection of its own, the slots are spread over
// the endpoints, pages render on all of them at once, and a slot whose browser went away
// fails its next job as unavailable (not the job's failure) while the others go on.
func TestRemotePool(t *testing.T) {
	a, b := startRemoteChromium(t), startRemoteChromium(t)
	br := newBrowser(t, Config{RemoteURL: a + "," + b, ChromeBin: "/nonexistent", Tabs: 4})
	if br.pool == nil || len(br.pool.members) != 4 {
		t.Fatalf("pool: %+v, want 4 members", br.pool)
	}
	per := map[string]int{}
	conns := map[any]bool{}
	for _, m := range br.pool.members {
		per[m.endpoint]++
		if m.b.inst == nil {
			t.Fatalf("slot on %s did not connect at start", m.endpoint)
		}
		conns[m.b.inst.ws] = true
	}
	if per[a] != 2 || per[b] != 2 || len(conns) != 4 {
		t.Fatalf("slots per endpoint %v, %d connections; want 2 and 2 on 4 connections", per, len(conns))
	}

	var wg sync.WaitGroup
	errs := make(chan error, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a loaded machine
	defer cancel()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := br.Capture(ctx, Request{URL: fixtures.URL + "/page?h=600", Name: "p"})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("capture on the pool: %v", err)
		}
	}
	used := map[string]bool{}
	for _, m := range br.pool.members {
		if m.b.inst != nil && m.b.inst.jobs > 0 {
			used[m.endpoint] = true
		}
	}
	if !used[a] || !used[b] {
		t.Errorf("endpoints that ran jobs: %v; want both", used)
	}

	// Endpoint b goes away: its slots cannot reconnect.
	for _, m := range br.pool.members {
		if m.endpoint == b {
			m.b.mu.Lock()
			m.b.cfg.RemoteURL = "http://" + closedPort(t)
			inst := m.b.inst
			m.b.mu.Unlock()
			inst.cancel(errBrowserGone)
		}
	}
	unavailable, ok := 0, 0
	for range 6 {
		_, err := br.Capture(ctx, Request{URL: fixtures.URL + "/page?h=600", Name: "p"})
		var ce *Error
		switch {
		case err == nil:
			ok++
		case errors.As(err, &ce) && ce.Code == CodeBrowserUnavailable && errors.Is(err, ErrUnavailable):
			unavailable++
		default:
			t.Fatalf("capture with one endpoint down: %v", err)
		}
	}
	// One at a time, a job that meets a dead slot is handed to an idle live one.
	if ok != 6 {
		t.Errorf("%d of 6 sequential jobs succeeded, %d unavailable; want every job moved to the live endpoint", ok, unavailable)
	}
}
