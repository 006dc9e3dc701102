package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/snapq/snapq/jobs"
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
