package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/jobs"
)

func ids(js []*jobs.Job) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.ID
	}
	return out
}

func urlsBody(urls ...string) []byte {
	return []byte(`{"urls": ["` + strings.Join(urls, `", "`) + `"]}`)
}

func TestSubmitStoresAndEnqueues(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	body := `{"labels": {"team": "web"}, "options": {"timeout_ms": 20000},
	  "targets": [{"url": "https://a.example/", "name": "home"}, {"url": "https://b.example/docs", "options": {"timeout_ms": 5000}}]}`
	b, js, replayed, err := e.svc.Submit(ctx, jobs.Submission{Body: []byte(body), Owner: "key-1"})
	if err != nil || replayed {
		t.Fatalf("Submit = replayed %v, %v", replayed, err)
	}
	got, err := e.store.GetBatch(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantBatch := struct {
		Owner  string
		Labels map[string]string
		Total  int
		Counts jobs.Counts
		Status jobs.BatchStatus
	}{"key-1", map[string]string{"team": "web"}, 2, jobs.Counts{Queued: 2}, jobs.BatchQueued}
	gotBatch := wantBatch
	gotBatch.Owner, gotBatch.Labels, gotBatch.Total, gotBatch.Counts, gotBatch.Status = got.OwnerKeyID, got.Labels, got.Total, got.Counts, got.Status()
	if diff := cmp.Diff(wantBatch, gotBatch); diff != "" {
		t.Errorf("stored batch (-want +got):\n%s", diff)
	}
	if b.Counts != (jobs.Counts{Queued: 2}) {
		t.Errorf("returned batch counts = %+v, want 2 queued", b.Counts)
	}

	type row struct {
		URL, Name string
		Status    jobs.JobStatus
		Seq       int
	}
	var gotRows []row
	for _, id := range ids(js) {
		j := e.store.job(t, id)
		gotRows = append(gotRows, row{j.URL, j.Name, j.Status, j.Seq})
		if j.BatchID != b.ID {
			t.Errorf("job %s belongs to batch %s, want %s", j.ID, j.BatchID, b.ID)
		}
	}
	wantRows := []row{{"https://a.example/", "home", jobs.StatusQueued, 0}, {"https://b.example/docs", "b.example-docs", jobs.StatusQueued, 1}}
	if diff := cmp.Diff(wantRows, gotRows); diff != "" {
		t.Errorf("stored jobs (-want +got):\n%s", diff)
	}
	// One task per job, each with its job's own timeout.
	wantTasks := map[string]task{
		js[0].ID: {State: "pending", Timeout: 20 * time.Second},
		js[1].ID: {State: "pending", Timeout: 5 * time.Second},
	}
	if diff := cmp.Diff(wantTasks, e.queue.snapshot()); diff != "" {
		t.Errorf("queue tasks (-want +got):\n%s", diff)
	}
}

func TestSubmitInvalidStoresNothing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	_, _, _, err := e.svc.Submit(context.Background(), jobs.Submission{Body: []byte(`{"urls": ["file:///etc/passwd"]}`), Owner: "key-1"})
	var ve *jobs.ValidationError
	if !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Field != "urls[0]" {
		t.Fatalf("Submit = %v, want a ValidationError naming urls[0]", err)
	}
	if n := e.store.batchCount(); n != 0 {
		t.Errorf("%d batches stored, want none", n)
	}
	if n := len(e.queue.snapshot()); n != 0 {
		t.Errorf("%d tasks enqueued, want none", n)
	}
}

// A failed enqueue does not fail the request: the job is stored as queued and
// the reconciler's next pass enqueues it.
func TestSubmitEnqueueFailureLeftToReconciler(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	e.queue.enqueueErr = errors.New("redis: connection refused")
	b, js, _, err := e.svc.Submit(ctx, jobs.Submission{Body: urlsBody("https://a.example/", "https://b.example/")})
	if err != nil {
		t.Fatalf("Submit with a failing queue = %v, want success", err)
	}
	if got, _ := e.store.GetBatch(ctx, b.ID); got.Counts != (jobs.Counts{Queued: 2}) {
		t.Fatalf("stored counts = %+v, want 2 queued", got.Counts)
	}
	if n := len(e.queue.snapshot()); n != 0 {
		t.Fatalf("%d tasks enqueued by a failing queue", n)
	}

	e.queue.enqueueErr = nil
	e.store.age(time.Minute) // older than the reconciler's default grace
	n, err := e.rec.Once(ctx)
	if err != nil || n != 2 {
		t.Fatalf("reconcile = %d, %v; want 2 jobs enqueued", n, err)
	}
	want := map[string]task{js[0].ID: {State: "pending", Timeout: time.Minute}, js[1].ID: {State: "pending", Timeout: time.Minute}}
	if diff := cmp.Diff(want, e.queue.snapshot()); diff != "" {
		t.Errorf("queue after reconcile (-want +got):\n%s", diff)
	}
}

func TestSubmitInFlightLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		maxInFlight int
		owner       string
		existing    int // unfinished jobs key-1 already has
		finished    int // finished jobs key-1 already has
		submit      int
		wantErr     error
	}{
		{name: "under the limit", maxInFlight: 3, owner: "key-1", existing: 1, submit: 2},
		{name: "over the limit", maxInFlight: 3, owner: "key-1", existing: 2, submit: 2, wantErr: jobs.ErrTooManyInFlight},
		{name: "one batch alone over the limit", maxInFlight: 3, owner: "key-1", submit: 4, wantErr: jobs.ErrTooManyInFlight},
		{name: "finished jobs do not count", maxInFlight: 3, owner: "key-1", existing: 1, finished: 5, submit: 2},
		{name: "another key's jobs do not count", maxInFlight: 3, owner: "key-2", existing: 3, submit: 3},
		{name: "no limit", maxInFlight: 0, owner: "key-1", existing: 10, submit: 3},
		{name: "no owner without auth", maxInFlight: 3, owner: "", existing: 0, submit: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			ctx := context.Background()
			e.svc.MaxInFlight = tt.maxInFlight
			seedOwned(t, e, "key-1", tt.existing, tt.finished)
			before := e.store.batchCount()
			urls := make([]string, tt.submit)
			for i := range urls {
				urls[i] = fmt.Sprintf("https://new.example/%d", i)
			}
			_, js, _, err := e.svc.Submit(ctx, jobs.Submission{Body: urlsBody(urls...), Owner: tt.owner})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Submit = %v, want %v", err, tt.wantErr)
			}
			wantBatches, wantJobs := before+1, tt.submit
			if tt.wantErr != nil {
				wantBatches, wantJobs = before, 0
			}
			if got := e.store.batchCount(); got != wantBatches {
				t.Errorf("batches stored = %d, want %d", got, wantBatches)
			}
			if len(js) != wantJobs {
				t.Errorf("jobs returned = %d, want %d", len(js), wantJobs)
			}
		})
	}
}

// seedOwned stores a batch of owner with unfinished queued jobs and finished ones.
func seedOwned(t *testing.T, e *env, owner string, unfinished, finished int) {
	t.Helper()
	if unfinished+finished == 0 {
		return
	}
	b := &jobs.Batch{ID: jobs.NewID(), OwnerKeyID: owner, Total: unfinished + finished}
	var js []*jobs.Job
	for i := range unfinished + finished {
		status := jobs.StatusQueued
		if i >= unfinished {
			status = jobs.StatusSucceeded
		}
		js = append(js, &jobs.Job{ID: jobs.NewID(), BatchID: b.ID, Seq: i, Status: status})
	}
	if err := e.store.CreateBatch(context.Background(), b, js); err != nil {
		t.Fatal(err)
	}
}

func TestSubmitIdempotency(t *testing.T) {
	t.Parallel()
	body := urlsBody("https://a.example/", "https://b.example/")
	tests := []struct {
		name         string
		second       jobs.Submission
		hideFirst    bool // the first batch commits between the second's lookup and insert
		wantErr      error
		wantReplayed bool
		wantSame     bool // the second gets the first batch and its jobs
	}{
		{name: "same key and body replays", second: jobs.Submission{Body: body, Owner: "key-1", IdempotencyKey: "order-42"},
			wantReplayed: true, wantSame: true},
		{name: "same key and body lost race replays", second: jobs.Submission{Body: body, Owner: "key-1", IdempotencyKey: "order-42"},
			hideFirst: true, wantReplayed: true, wantSame: true},
		{name: "same key other body conflicts", second: jobs.Submission{Body: urlsBody("https://c.example/"), Owner: "key-1", IdempotencyKey: "order-42"},
			wantErr: jobs.ErrIdempotencyConflict},
		{name: "same key other body lost race conflicts", second: jobs.Submission{Body: urlsBody("https://c.example/"), Owner: "key-1", IdempotencyKey: "order-42"},
			hideFirst: true, wantErr: jobs.ErrIdempotencyConflict},
		{name: "same body other key is new", second: jobs.Submission{Body: body, Owner: "key-1", IdempotencyKey: "order-43"}},
		{name: "same key other owner is new", second: jobs.Submission{Body: body, Owner: "key-2", IdempotencyKey: "order-42"}},
		{name: "no key is new", second: jobs.Submission{Body: body, Owner: "key-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			ctx := context.Background()
			b1, js1, replayed, err := e.svc.Submit(ctx, jobs.Submission{Body: body, Owner: "key-1", IdempotencyKey: "order-42"})
			if err != nil || replayed {
				t.Fatalf("first Submit = replayed %v, %v", replayed, err)
			}
			if tt.hideFirst {
				e.store.hideIdempotency = 1
			}
			tasksBefore := len(e.queue.snapshot())
			b2, js2, replayed, err := e.svc.Submit(ctx, tt.second)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("second Submit = %v, want %v", err, tt.wantErr)
			}
			if replayed != tt.wantReplayed {
				t.Errorf("replayed = %v, want %v", replayed, tt.wantReplayed)
			}
			wantBatches, wantTasks := 2, tasksBefore+len(js2)
			if tt.wantErr != nil || tt.wantSame {
				wantBatches, wantTasks = 1, tasksBefore
			}
			if got := e.store.batchCount(); got != wantBatches {
				t.Errorf("batches stored = %d, want %d", got, wantBatches)
			}
			if got := len(e.queue.snapshot()); got != wantTasks {
				t.Errorf("tasks = %d, want %d", got, wantTasks)
			}
			if tt.wantErr != nil {
				return
			}
			if (b2.ID == b1.ID) != tt.wantSame {
				t.Errorf("second batch %s, first %s: same = %v, want %v", b2.ID, b1.ID, b2.ID == b1.ID, tt.wantSame)
			}
			if tt.wantSame {
				if diff := cmp.Diff(ids(js1), ids(js2)); diff != "" {
					t.Errorf("replayed jobs (-want +got):\n%s", diff)
				}
				if b2.Total != 2 || b2.Counts != (jobs.Counts{Queued: 2}) {
					t.Errorf("replayed batch total %d counts %+v, want 2 queued", b2.Total, b2.Counts)
				}
			}
		})
	}
}

// A replay returns every job of the batch, however the store pages them.
func TestSubmitReplayReadsEveryPage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	e.store.maxPage = 2
	sub := jobs.Submission{Body: urlsBody("https://a.example/1", "https://a.example/2", "https://a.example/3",
		"https://a.example/4", "https://a.example/5"), IdempotencyKey: "k"}
	_, js1, _, err := e.svc.Submit(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	_, js2, replayed, err := e.svc.Submit(ctx, sub)
	if err != nil || !replayed {
		t.Fatalf("replay = replayed %v, %v", replayed, err)
	}
	if diff := cmp.Diff(ids(js1), ids(js2)); diff != "" {
		t.Errorf("replayed jobs (-want +got):\n%s", diff)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		deleteErr error
	}{
		{name: "deletes the canceled jobs' tasks"},
		{name: "a failed delete does not fail the cancel", deleteErr: errors.New("redis: timeout")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			ctx := context.Background()
			b, js, _, err := e.svc.Submit(ctx, jobs.Submission{Body: urlsBody("https://a.example/", "https://b.example/", "https://c.example/")})
			if err != nil {
				t.Fatal(err)
			}
			if _, started, err := e.store.StartJob(ctx, js[0].ID); err != nil || !started {
				t.Fatalf("StartJob = %v, %v", started, err)
			}
			e.queue.deleteErr = tt.deleteErr

			got, err := e.svc.Cancel(ctx, b.ID)
			if err != nil {
				t.Fatalf("Cancel = %v", err)
			}
			if diff := cmp.Diff(jobs.Counts{Running: 1, Canceled: 2}, got.Counts); diff != "" {
				t.Errorf("batch counts after cancel (-want +got):\n%s", diff)
			}
			for _, j := range js[1:] {
				if s := e.store.job(t, j.ID); s.Status != jobs.StatusCanceled || s.ErrorCode != jobs.CodeCanceled {
					t.Errorf("job %d: status %s code %s, want canceled", j.Seq, s.Status, s.ErrorCode)
				}
			}
			wantTasks := []string{js[0].ID} // the running job keeps its task
			if tt.deleteErr != nil {
				wantTasks = ids(js)
			}
			var gotTasks []string
			for _, j := range js {
				if _, ok := e.queue.snapshot()[j.ID]; ok {
					gotTasks = append(gotTasks, j.ID)
				}
			}
			if diff := cmp.Diff(wantTasks, gotTasks); diff != "" {
				t.Errorf("tasks left (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCancelUnknownBatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	if _, err := e.svc.Cancel(context.Background(), jobs.NewID()); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("Cancel unknown batch = %v, want ErrNotFound", err)
	}
}
