package jobs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/jobs"
)

// memCache is a ResultCache over the memStore: the newest succeeded,
// rendered job of the same URL and options hash (one owner).
type memCache struct {
	store  *memStore
	maxAge []time.Duration
}

func (c *memCache) CachedCapture(ctx context.Context, job *jobs.Job, maxAge time.Duration) (*jobs.CachedCapture, error) {
	c.maxAge = append(c.maxAge, maxAge)
	c.store.mu.Lock()
	defer c.store.mu.Unlock()
	for _, j := range c.store.byID {
		if j.ID != job.ID && j.Status == jobs.StatusSucceeded && j.URL == job.URL &&
			jobs.OptionsHash(j.Options) == jobs.OptionsHash(job.Options) && j.Result.CachedFrom == "" {
			return &jobs.CachedCapture{JobID: j.ID, Result: j.Result, Artifacts: c.store.artifacts[j.ID]}, nil
		}
	}
	return nil, nil
}

func TestOptionsHash(t *testing.T) {
	t.Parallel()
	base := jobs.DefaultOptions()
	same := jobs.DefaultOptions()
	same.MaxAgeS, same.TimeoutMS, same.HostConcurrency = 600, 5000, 2
	if jobs.OptionsHash(base) != jobs.OptionsHash(same) {
		t.Error("max_age_s, timeout_ms and host_concurrency changed the options hash; they do not shape the outputs")
	}
	other := jobs.DefaultOptions()
	other.Viewport.Width = 800
	if jobs.OptionsHash(base) == jobs.OptionsHash(other) {
		t.Error("a different viewport width gave the same options hash")
	}
}

func TestMaxAgeValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   float64
		ok   bool
	}{
		{"zero", 0, true}, {"hour", 3600, true}, {"max", jobs.MaxCacheAgeS, true},
		{"negative", -1, false}, {"fraction", 1.5, false}, {"too large", jobs.MaxCacheAgeS + 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.in
			var errs jobs.FieldErrors
			o := jobs.ResolveOptions(nil, "options", &jobs.OptionsInput{MaxAgeS: &v}, "targets[0].options", &errs)
			if tc.ok {
				if len(errs) != 0 || o.MaxAgeS != int(tc.in) {
					t.Errorf("max_age_s %v: errors %v, value %d", tc.in, errs, o.MaxAgeS)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != "targets[0].options.max_age_s" || !strings.Contains(errs[0].Message, "2592000") {
				t.Errorf("max_age_s %v: errors %+v, want one naming targets[0].options.max_age_s and its limit", tc.in, errs)
			}
		})
	}
}

func TestHandlerResultCache(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cache := &memCache{store: e.store}
	var rendered, hits int
	e.h.Cache = cache
	e.h.Captured = func(cached bool) {
		if cached {
			hits++
		} else {
			rendered++
		}
	}
	ctx := jobs.WithLastAttempt(context.Background(), false)
	e.renderer.result = &capture.Result{HTTPStatus: 200, FinalURL: "https://a.example/docs", Title: "Docs",
		Images: []capture.Image{{Name: "a.png", Index: 1, ContentType: "image/png", Data: []byte("png1"), Width: 10, Height: 10}}}

	first := queuedJob(e, 0)
	if err := e.h.Capture(ctx, jobs.CapturePayload{JobID: first.ID}); err != nil {
		t.Fatal(err)
	}
	second := &jobs.Job{ID: jobs.NewID(), BatchID: jobs.NewID(), URL: first.URL, Name: first.Name,
		Options: jobs.DefaultOptions(), Status: jobs.StatusQueued}
	second.Options.MaxAgeS = 60
	e.store.add(second)
	if err := e.h.Capture(ctx, jobs.CapturePayload{JobID: second.ID}); err != nil {
		t.Fatal(err)
	}
	if rendered != 1 || hits != 1 || len(e.renderer.requests()) != 1 {
		t.Fatalf("renders %d (renderer calls %d), hits %d; want 1 render and 1 hit", rendered, len(e.renderer.requests()), hits)
	}
	got := e.store.job(t, second.ID)
	if got.Status != jobs.StatusSucceeded || got.Result.CachedFrom != first.ID || got.Result.Title != "Docs" {
		t.Errorf("cached job: status %s cached_from %q title %q; want succeeded from %s", got.Status, got.Result.CachedFrom, got.Result.Title, first.ID)
	}
	a, b := e.store.artifactsOf(first.ID), e.store.artifactsOf(second.ID)
	if len(a) != 1 || len(b) != 1 || a[0].ObjectKey != b[0].ObjectKey || a[0].SHA256 != b[0].SHA256 || a[0].ID == b[0].ID || b[0].JobID != second.ID {
		t.Errorf("artifacts: source %+v, cached %+v; want new rows naming the same object", a, b)
	}
	if len(cache.maxAge) != 1 || cache.maxAge[0] != time.Minute {
		t.Errorf("lookups %v; want one, with max age 1m (the job without max_age_s looks nothing up)", cache.maxAge)
	}
}
