package web

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/ratelimit"
)

// ratelimit.Limiter is the api's FailureLimiter.
var _ FailureLimiter = (*ratelimit.Limiter)(nil)

// memLimiter allows n requests per key, then refuses them; err fails every call.
type memLimiter struct {
	mu    sync.Mutex
	n     int
	count map[string]int
	err   error
}

func (l *memLimiter) Allow(_ context.Context, key string) (bool, time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return false, 0, l.err
	}
	if l.count == nil {
		l.count = map[string]int{}
	}
	l.count[key]++
	return l.count[key] <= l.n, time.Minute, nil
}

func (l *memLimiter) Blocked(_ context.Context, key string) (bool, time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return false, 0, l.err
	}
	return l.count[key] >= l.n, time.Minute, nil
}

// Bad keys are limited per client address: past the limit every attempt from
// that address is refused, even with a valid key, so keys cannot be guessed
// at speed; another address still gets its 401.
func TestAuthFailuresLimitedPerAddress(t *testing.T) {
	t.Parallel()
	secret, _, err := jobs.NewAPIKey("test")
	if err != nil {
		t.Fatal(err)
	}
	repo := &fakeRepo{}
	queues := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("queues")) })
	s := &Server{Service: &jobs.Service{Repo: repo, Queue: &fakeQueue{}}, Batches: repo, Keys: &fakeKeys{sum: jobs.HashKey(secret)},
		Queues: queues, AuthFailures: &memLimiter{n: 3}, Config: Config{Auth: true}}
	h := s.Handler()
	try := func(path, addr, key string) *httptest.ResponseRecorder {
		return get(h, path, func(r *http.Request) {
			r.RemoteAddr = addr + ":40000"
			if key != "" {
				r.Header.Set("Authorization", "Bearer "+key)
			}
		})
	}
	bad := "sq_" + strings.Repeat("x", 43)
	for i, path := range []string{"/v1/batches", QueuesPath + "/", "/v1/batches"} {
		if rec := try(path, "192.0.2.1", bad); rec.Code != 401 {
			t.Fatalf("bad key %d on %s = %d, want 401", i+1, path, rec.Code)
		}
	}
	for _, key := range []string{bad, "", secret} {
		rec := try("/v1/batches", "192.0.2.1", key)
		if rec.Code != 429 || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), `"rate_limited"`) {
			t.Errorf("past the limit, key %q = %d %s (Retry-After %q), want 429 rate_limited", key, rec.Code, rec.Body, rec.Header().Get("Retry-After"))
		}
	}
	spoofed := get(h, "/v1/batches", func(r *http.Request) {
		r.RemoteAddr = "192.0.2.1:40000"
		r.Header.Set("X-Forwarded-For", "198.51.100.9")
		r.Header.Set("Authorization", "Bearer "+bad)
	})
	if spoofed.Code != 429 {
		t.Errorf("past the limit with a made-up X-Forwarded-For = %d, want 429", spoofed.Code)
	}
	if rec := try("/v1/batches", "192.0.2.2", bad); rec.Code != 401 {
		t.Errorf("another address = %d, want 401", rec.Code)
	}
	if rec := try("/v1/batches", "192.0.2.2", secret); rec.Code != 200 {
		t.Errorf("another address with a valid key = %d, want 200", rec.Code)
	}
}

// /metrics and the queue UI count against the caller's request rate.
func TestMetricsAndQueuesRateLimited(t *testing.T) {
	t.Parallel()
	secret, _, err := jobs.NewAPIKey("test")
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMetrics(MetricsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	repo := &fakeRepo{}
	queues := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("queues")) })
	for _, path := range []string{MetricsPath, QueuesPath + "/"} {
		s := &Server{Service: &jobs.Service{Repo: repo, Queue: &fakeQueue{}}, Batches: repo, Keys: &fakeKeys{sum: jobs.HashKey(secret)},
			Queues: queues, Metrics: m, Limiter: &memLimiter{n: 2}, Config: Config{Auth: true, AdminToken: testAdminToken}}
		h := s.Handler()
		cred := secret
		if path != MetricsPath {
			cred = testAdminToken // the queue UI takes only the admin token
		}
		codes := []int{}
		for range 3 {
			codes = append(codes, get(h, path, bearer(cred)).Code)
		}
		if codes[0] != 200 || codes[2] != 429 {
			t.Errorf("GET %s three times = %v, want 200 … 429", path, codes)
		}
	}
}

// When Redis cannot answer, the limiters let requests through (the decision
// docs/operating/security.md explains) and count the failure.
func TestLimiterFailsOpen(t *testing.T) {
	t.Parallel()
	secret, _, err := jobs.NewAPIKey("test")
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMetrics(MetricsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	down := &memLimiter{err: errors.New("redis: connection refused")}
	repo := &fakeRepo{}
	s := &Server{Service: &jobs.Service{Repo: repo, Queue: &fakeQueue{}}, Batches: repo, Keys: &fakeKeys{sum: jobs.HashKey(secret)},
		Metrics: m, Limiter: down, AuthFailures: down, Config: Config{Auth: true}}
	h := s.Handler()
	if rec := get(h, "/v1/batches", bearer(secret)); rec.Code != 200 {
		t.Errorf("valid key with Redis down = %d, want 200", rec.Code)
	}
	if rec := get(h, "/v1/batches", bearer("sq_"+strings.Repeat("x", 43))); rec.Code != 401 {
		t.Errorf("bad key with Redis down = %d, want 401", rec.Code)
	}
	body := scrape(t, h, bearer(secret))
	if !strings.Contains(body, `snapq_rate_limit_errors_total{limiter="auth_failures"}`) ||
		!strings.Contains(body, `snapq_rate_limit_errors_total{limiter="requests"}`) {
		t.Errorf("/metrics has no snapq_rate_limit_errors_total for both limiters:\n%s", grepLines(body, "snapq_rate_limit"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
