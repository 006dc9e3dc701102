package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/store"
)

// ownerKey creates an API key and returns its id (a batch owner).
func ownerKey(t *testing.T, st *store.Store, name string) string {
	t.Helper()
	_, k, err := jobs.NewAPIKey(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	return k.ID
}

// heldBatch submits n targets for owner ("" without auth) through a Service
// with a dispatcher (so nothing is enqueued) and returns the job ids in
// submission order.
func heldBatch(t *testing.T, st *store.Store, owner string, n int) (batchID string, ids []string) {
	t.Helper()
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("%q", fmt.Sprintf("https://example.com/%d", i))
	}
	svc := &jobs.Service{Repo: st, Queue: nopQueue{}, Dispatch: &jobs.Dispatcher{}}
	b, js, _, err := svc.Submit(context.Background(), jobs.Submission{Owner: owner,
		Body: []byte(`{"urls": [` + strings.Join(urls, ",") + `]}`)})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range js {
		ids = append(ids, j.ID)
	}
	return b.ID, ids
}

// dispatchOrder runs DispatchHeld and names each dispatched job "owner#seq"
// by looking it up in names.
func dispatchOrder(t *testing.T, st *store.Store, depth int, names map[string]string) []string {
	t.Helper()
	ds, err := st.DispatchHeld(context.Background(), depth)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, d := range ds {
		out = append(out, names[d.ID])
	}
	return out
}

func finish(t *testing.T, st *store.Store, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if err := st.ExecForTest(context.Background(), `UPDATE jobs SET status = 'succeeded' WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDispatchFairAcrossOwners(t *testing.T) {
	t.Parallel()
	st := setup(t)
	a, b := ownerKey(t, st, "a"), ownerKey(t, st, "b")
	if a > b {
		a, b = b, a // names follow the owners' order, the tie-break
	}
	names := map[string]string{}
	idsOf := map[string][]string{}
	for _, o := range []struct {
		name, owner string
		n           int
	}{{"A", a, 10}, {"B", b, 3}, {"none", "", 2}} {
		_, ids := heldBatch(t, st, o.owner, o.n)
		idsOf[o.name] = ids
		for i, id := range ids {
			names[id] = fmt.Sprintf("%s#%d", o.name, i)
		}
	}

	// Nothing in flight: plain round-robin, each owner's jobs in order.
	got := dispatchOrder(t, st, 7, names)
	want := []string{"none#0", "A#0", "B#0", "none#1", "A#1", "B#1", "A#2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("first pass (-want +got):\n%s", diff)
	}
	// The depth is full: nothing more.
	if got := dispatchOrder(t, st, 7, names); len(got) != 0 {
		t.Fatalf("full depth dispatched %v", got)
	}
	// A's three finish; room 3. A now has none in flight, B two: A's shares
	// 1, 2, 3 against B's 3: A takes two, then the tie goes by owner.
	finish(t, st, idsOf["A"][:3]...)
	got = dispatchOrder(t, st, 7, names)
	want = []string{"A#3", "A#4", "A#5"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("after A's finished (-want +got):\n%s", diff)
	}
	// B and none finish everything in flight; room 4 with A at 3: B takes
	// its last one and none has nothing left, then A.
	finish(t, st, idsOf["B"][:2]...)
	finish(t, st, idsOf["none"]...)
	got = dispatchOrder(t, st, 7, names)
	want = []string{"B#2", "A#6", "A#7", "A#8"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("after B's finished (-want +got):\n%s", diff)
	}
}

func TestDispatchSkipsLockedAndCanceled(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	batchA, a := heldBatch(t, st, "", 3)
	_, b := heldBatch(t, st, ownerKey(t, st, "b"), 2)
	// A writer holds A's first job: the pass skips it rather than wait.
	end, err := st.HoldForTest(ctx, `SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE`, a[0])
	if err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	ds, err := st.DispatchHeld(tctx, 2)
	cancel()
	end()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, d := range ds {
		got[d.ID] = true
	}
	if len(ds) != 2 || got[a[0]] || !got[a[1]] || !got[b[0]] {
		t.Fatalf("dispatched %v; want a[1] and b[0], not the locked a[0]", ds)
	}
	// A canceled batch's held jobs are never dispatched.
	if _, err := st.CancelBatch(ctx, batchA); err != nil {
		t.Fatal(err)
	}
	ds, err = st.DispatchHeld(ctx, 10)
	if err != nil || len(ds) != 1 || ds[0].ID != b[1] {
		t.Fatalf("after cancel: %v, %v; want only b[1]", ds, err)
	}
	bt, err := st.GetBatch(ctx, batchA)
	if err != nil || bt.Counts.Canceled != 3 || bt.FinishedAt == nil {
		t.Fatalf("canceled batch: %+v, %v; want its 3 queued jobs (2 held) canceled and the batch finished", bt, err)
	}
}

func TestDispatchConcurrentPassesKeepDepth(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	_, ids := heldBatch(t, st, "", 60)
	_, more := heldBatch(t, st, ownerKey(t, st, "k"), 40)
	ids = append(ids, more...)

	// A pass waits while another replica holds the lock.
	end, err := st.HoldForTest(ctx, store.DispatchLockSQL)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan int)
	go func() {
		ds, _ := st.DispatchHeld(ctx, 10)
		done <- len(ds)
	}()
	select {
	case n := <-done:
		t.Fatalf("a pass ran (%d dispatched) while another held the dispatch lock", n)
	case <-time.After(300 * time.Millisecond):
	}
	end()
	if n := <-done; n != 10 {
		t.Fatalf("the waiting pass dispatched %d, want 10", n)
	}

	// Eight replicas at once with depth 20: 10 more in all, none twice.
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ds, err := st.DispatchHeld(ctx, 20)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, d := range ds {
				seen[d.ID]++
			}
		}()
	}
	wg.Wait()
	if len(seen) != 10 {
		t.Fatalf("concurrent passes dispatched %d distinct jobs, want 10 (depth 20, 10 in flight)", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("job %s dispatched %d times", id, n)
		}
	}
}

// The interactive lane has its own depth: a full batch lane does not hold back a
// synchronous capture, whose job is dispatched by DispatchInteractive only.
func TestDispatchInteractiveLane(t *testing.T) {
	st := setup(t)
	ctx := context.Background()
	a := ownerKey(t, st, "batcher")
	heldBatch(t, st, a, 5)
	svc := &jobs.Service{Repo: st, Queue: nopQueue{}, Dispatch: &jobs.Dispatcher{}}
	_, j, _, err := svc.SubmitCapture(ctx, jobs.CaptureSubmission{Owner: a, Body: []byte(`{"url":"https://example.com/x"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if ds, err := st.DispatchHeld(ctx, 5); err != nil || len(ds) != 5 {
		t.Fatalf("batch lane: %d dispatched, %v; want its 5 jobs only", len(ds), err)
	}
	ds, err := st.DispatchInteractive(ctx, 1)
	if err != nil || len(ds) != 1 || ds[0].ID != j.ID || !ds[0].Interactive {
		t.Fatalf("interactive lane: %+v, %v; want the capture's job", ds, err)
	}
	if ds, _ := st.DispatchInteractive(ctx, 1); len(ds) != 0 {
		t.Fatalf("interactive lane past its depth: %+v", ds)
	}
}
