package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
	"github.com/snapq/snapq/store"
)

// newKey stores an API key and returns its id (the owner of what it creates).
func newKey(t *testing.T, st *store.Store) string {
	t.Helper()
	_, key, err := jobs.NewAPIKey("limits")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateKey(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	return key.ID
}

// urlsBody is a batch of n targets.
func urlsBody(n int) []byte {
	body := `{"urls": [`
	for i := range n {
		if i > 0 {
			body += ","
		}
		body += fmt.Sprintf(`"https://example.com/%d"`, i)
	}
	return []byte(body + `]}`)
}

// Concurrent submissions of one key never take it past MaxInFlight: the
// count and the insert are one step per key, so exactly as many batches are
// accepted as fit, and the rest are ErrTooManyInFlight.
func TestSubmitInFlightLimitIsAtomic(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	owner := newKey(t, st)
	const maxInFlight, perBatch, submitters = 10, 3, 24
	svc := &jobs.Service{Repo: st, Queue: nopQueue{}, MaxInFlight: maxInFlight}

	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, submitters)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, _, _, errs[i] = svc.Submit(ctx, jobs.Submission{Body: urlsBody(perBatch), Owner: owner})
		}()
	}
	close(start)
	wg.Wait()

	accepted := 0
	for _, err := range errs {
		switch {
		case err == nil:
			accepted++
		case !errors.Is(err, jobs.ErrTooManyInFlight):
			t.Fatalf("Submit: %v", err)
		}
	}
	n, err := st.CountUnfinished(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	if n > maxInFlight || accepted != maxInFlight/perBatch {
		t.Fatalf("%d concurrent batches of %d: %d accepted, %d jobs in flight; want %d accepted, at most %d in flight",
			submitters, perBatch, accepted, n, maxInFlight/perBatch, maxInFlight)
	}
}

const twoTargetSuite = `{"name": "site", "schedule": {"cron": "*/5 * * * *"}, "targets": [
	{"url": "https://example.com/", "name": "home"}, {"url": "https://example.com/pricing", "name": "pricing"}]}`

// A run's jobs count against its owner's in-flight cap like a batch's: a
// manual run over it is ErrTooManyInFlight (429 at the api), a scheduled one
// is skipped; neither writes a run or a batch.
func TestSuiteRunsCountAgainstInFlightLimit(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	owner := newKey(t, st)
	g := &regression.Service{Repo: st, Queue: nopQueue{}, MaxInFlight: 3}
	s, err := g.CreateSuite(ctx, owner, []byte(twoTargetSuite))
	if err != nil {
		t.Fatal(err)
	}
	svc := &jobs.Service{Repo: st, Queue: nopQueue{}, MaxInFlight: 3}
	if _, _, _, err := svc.Submit(ctx, jobs.Submission{Body: urlsBody(2), Owner: owner}); err != nil {
		t.Fatal(err)
	}

	// 2 in flight + 2 captures > 3.
	if _, err := g.StartRun(ctx, s, regression.TriggerManual, nil, regression.RunOptions{}); !errors.Is(err, jobs.ErrTooManyInFlight) {
		t.Fatalf("manual run over the cap: %v, want ErrTooManyInFlight", err)
	}
	now := time.Date(2026, 11, 30, 8, 7, 31, 0, time.UTC)
	runner := &regression.SuiteRunner{Regression: g, Now: func() time.Time { return now }}
	if err := runner.Run(ctx, regression.SuiteRunPayload{SuiteID: s.ID}); err != nil {
		t.Fatalf("scheduled run over the cap: %v, want it skipped without an error", err)
	}
	if runs, _, err := st.ListRuns(ctx, s.ID, 10, ""); err != nil || len(runs) != 0 {
		t.Fatalf("runs over the cap: %d, %v; want none", len(runs), err)
	}
	if n, err := st.CountUnfinished(ctx, owner); err != nil || n != 2 {
		t.Fatalf("jobs in flight: %d, %v; want the batch's 2", n, err)
	}

	// Under the cap, a run starts and its jobs count in turn.
	g.MaxInFlight = 4
	if _, err := g.StartRun(ctx, s, regression.TriggerManual, nil, regression.RunOptions{}); err != nil {
		t.Fatalf("manual run under the cap: %v", err)
	}
	if _, _, _, err := svc.Submit(ctx, jobs.Submission{Body: urlsBody(1), Owner: owner}); !errors.Is(err, jobs.ErrTooManyInFlight) {
		t.Fatalf("batch after the run filled the cap: %v, want ErrTooManyInFlight", err)
	}
}

// A key holds at most MaxSuitesPerKey suites, even when it creates them
// concurrently; another key is not affected.
func TestSuitesPerKeyLimit(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	owner, other := newKey(t, st), newKey(t, st)
	const maxSuites, creators = 3, 10
	g := &regression.Service{Repo: st, Queue: nopQueue{}, MaxSuitesPerKey: maxSuites}

	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, creators)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = g.CreateSuite(ctx, owner, []byte(twoTargetSuite))
		}()
	}
	close(start)
	wg.Wait()
	created := 0
	for _, err := range errs {
		switch {
		case err == nil:
			created++
		case !errors.Is(err, regression.ErrTooManySuites):
			t.Fatalf("CreateSuite: %v", err)
		}
	}
	suites, _, err := st.ListSuites(ctx, owner, 100, "")
	if err != nil || created != maxSuites || len(suites) != maxSuites {
		t.Fatalf("%d concurrent creations with a cap of %d: %d created, %d stored (%v)", creators, maxSuites, created, len(suites), err)
	}
	if _, err := g.CreateSuite(ctx, other, []byte(twoTargetSuite)); err != nil {
		t.Fatalf("another key's first suite: %v", err)
	}
	// Deleting one makes room.
	if err := st.DeleteSuite(ctx, suites[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := g.CreateSuite(ctx, owner, []byte(twoTargetSuite)); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
}

// Revoking a key stops its suites' schedules: they leave the scheduler's
// list, and an activation already queued starts no run.
func TestRevokedKeysSuitesDoNotRun(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	owner, other := newKey(t, st), newKey(t, st)
	g := &regression.Service{Repo: st, Queue: nopQueue{}}
	s, err := g.CreateSuite(ctx, owner, []byte(twoTargetSuite))
	if err != nil {
		t.Fatal(err)
	}
	kept, err := g.CreateSuite(ctx, other, []byte(twoTargetSuite))
	if err != nil {
		t.Fatal(err)
	}
	scheduled := func() []string {
		t.Helper()
		sched, err := st.ScheduledSuites(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, su := range sched {
			ids = append(ids, su.ID)
		}
		return ids
	}
	if got := scheduled(); len(got) != 2 {
		t.Fatalf("scheduled suites before revoking: %v", got)
	}
	if err := st.RevokeKey(ctx, owner); err != nil {
		t.Fatal(err)
	}
	if got := scheduled(); len(got) != 1 || got[0] != kept.ID {
		t.Fatalf("scheduled suites after revoking %s's key: %v, want only %s", s.ID, got, kept.ID)
	}

	now := time.Date(2026, 11, 30, 8, 7, 31, 0, time.UTC)
	runner := &regression.SuiteRunner{Regression: g, Now: func() time.Time { return now }}
	if err := runner.Run(ctx, regression.SuiteRunPayload{SuiteID: s.ID}); err != nil {
		t.Fatal(err)
	}
	if runs, _, err := st.ListRuns(ctx, s.ID, 10, ""); err != nil || len(runs) != 0 {
		t.Fatalf("runs of a revoked key's suite: %d, %v; want none", len(runs), err)
	}
	if err := runner.Run(ctx, regression.SuiteRunPayload{SuiteID: kept.ID}); err != nil {
		t.Fatal(err)
	}
	if runs, _, err := st.ListRuns(ctx, kept.ID, 10, ""); err != nil || len(runs) != 1 {
		t.Fatalf("runs of the other key's suite: %d, %v; want 1", len(runs), err)
	}
}
