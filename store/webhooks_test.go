package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/store"
	"github.com/snapq/snapq/webhook"
)

const testWebhookSecret = "0123456789abcdef-secret"

// newWebhookBatch submits a batch of n jobs with a webhook.
func newWebhookBatch(t *testing.T, st *store.Store, n int) (*jobs.Batch, []*jobs.Job) {
	t.Helper()
	svc := &jobs.Service{Repo: st, Queue: nopQueue{}}
	body := `{"webhook": {"url": "HTTPS://Hooks.Example/snapq#frag", "secret": "` + testWebhookSecret + `"}, "urls": [`
	for i := range n {
		if i > 0 {
			body += ","
		}
		body += fmt.Sprintf(`"https://example.com/p%d"`, i)
	}
	b, js, _, err := svc.Submit(context.Background(), jobs.Submission{Body: []byte(body + `]}`)})
	if err != nil {
		t.Fatal(err)
	}
	return b, js
}

func succeed(t *testing.T, st *store.Store, jobID string) {
	t.Helper()
	ctx := context.Background()
	j, started, err := st.StartJob(ctx, jobID)
	if err != nil || !started {
		t.Fatalf("StartJob %s = %v, %v", jobID, started, err)
	}
	res := &jobs.Result{HTTPStatus: 200, TimingsMS: map[string]int64{}}
	if ok, err := st.CompleteJob(ctx, jobID, j.Attempts, res, nil); err != nil || !ok {
		t.Fatalf("CompleteJob %s = %v, %v", jobID, ok, err)
	}
}

func deliveries(t *testing.T, st *store.Store, batchID string) []*webhook.Delivery {
	t.Helper()
	ds, err := st.ListWebhookDeliveries(context.Background(), batchID)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func TestWebhookDeliveryCreatedOnce(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	b, js := newWebhookBatch(t, st, 2)

	wh, err := st.GetBatchWebhook(ctx, b.ID)
	if err != nil || wh.URL != "https://hooks.example/snapq" || wh.Secret != testWebhookSecret {
		t.Fatalf("GetBatchWebhook = %+v, %v; want the normalized url and the secret", wh, err)
	}
	succeed(t, st, js[0].ID)
	if ds := deliveries(t, st, b.ID); len(ds) != 0 {
		t.Fatalf("a running batch has %d deliveries", len(ds))
	}
	succeed(t, st, js[1].ID)
	ds := deliveries(t, st, b.ID)
	if len(ds) != 1 || ds[0].Event != jobs.EventBatchCompleted || ds[0].Status != webhook.DeliveryPending ||
		ds[0].Attempts != 0 || ds[0].LastStatus != 0 || ds[0].DeliveredAt != nil {
		t.Fatalf("deliveries after completion = %+v", ds)
	}
	first := ds[0].ID

	// finishBatch again: finished_at is set, nothing happens.
	if err := st.FinishBatchForTest(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	// Even if the batch is "finished" a second time, the delivery stays unique.
	if err := st.ExecForTest(ctx, `UPDATE batches SET finished_at = NULL WHERE id = $1`, b.ID); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishBatchForTest(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	if ds := deliveries(t, st, b.ID); len(ds) != 1 || ds[0].ID != first {
		t.Fatalf("after finishing twice: %+v; want the one delivery %s", ds, first)
	}
	got, _ := st.GetBatch(ctx, b.ID)
	if got.FinishedAt == nil {
		t.Fatal("finished_at not set again")
	}
	pending, err := st.PendingWebhookDeliveries(ctx, time.Now().Add(time.Second), 10)
	if err != nil || len(pending) != 1 || pending[0].ID != first {
		t.Fatalf("PendingWebhookDeliveries = %+v, %v", pending, err)
	}
}

func TestWebhookNoneWithoutWebhook(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	b, js := newBatch(t, st, 1)
	succeed(t, st, js[0].ID)
	if ds := deliveries(t, st, b.ID); len(ds) != 0 {
		t.Fatalf("a batch without webhook has deliveries %+v", ds)
	}
	if _, err := st.GetBatchWebhook(ctx, b.ID); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("GetBatchWebhook = %v, want ErrNotFound", err)
	}
}

func TestWebhookCancelCreatesDelivery(t *testing.T) {
	t.Parallel()
	st := setup(t)
	b, js := newWebhookBatch(t, st, 2)
	if err := st.FailJob(context.Background(), js[0].ID, 0, jobs.JobError{Code: "x", Message: "y"}, nil, true); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CancelBatch(context.Background(), b.ID); err != nil {
		t.Fatal(err)
	}
	if ds := deliveries(t, st, b.ID); len(ds) != 1 || ds[0].Status != webhook.DeliveryPending {
		t.Fatalf("after cancel: %+v, want one pending delivery", ds)
	}
}

func TestWebhookAttemptRecording(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	b, js := newWebhookBatch(t, st, 1)
	succeed(t, st, js[0].ID)
	id := deliveries(t, st, b.ID)[0].ID

	ok, err := st.RecordWebhookAttempt(ctx, id, webhook.Attempt{Status: webhook.DeliveryPending, HTTPStatus: 500, Error: "receiver answered HTTP 500"})
	if err != nil || !ok {
		t.Fatalf("record failed attempt = %v, %v", ok, err)
	}
	d, err := st.GetWebhookDelivery(ctx, id)
	if err != nil || d.Status != webhook.DeliveryPending || d.Attempts != 1 || d.LastStatus != 500 ||
		d.LastError != "receiver answered HTTP 500" || d.DeliveredAt != nil {
		t.Fatalf("after a failed attempt: %+v, %v", d, err)
	}
	ok, err = st.RecordWebhookAttempt(ctx, id, webhook.Attempt{Status: webhook.DeliveryDelivered, HTTPStatus: 204})
	if err != nil || !ok {
		t.Fatalf("record success = %v, %v", ok, err)
	}
	d, _ = st.GetWebhookDelivery(ctx, id)
	if d.Status != webhook.DeliveryDelivered || d.Attempts != 2 || d.LastStatus != 204 || d.LastError != "" || d.DeliveredAt == nil {
		t.Fatalf("after delivery: %+v", d)
	}
	// A final delivery is not touched again.
	if ok, err := st.RecordWebhookAttempt(ctx, id, webhook.Attempt{Status: webhook.DeliveryFailed, Error: "late"}); err != nil || ok {
		t.Fatalf("record on a delivered delivery = %v, %v; want false", ok, err)
	}
	if ok, err := st.FailWebhookDelivery(ctx, id, "late"); err != nil || ok {
		t.Fatalf("fail a delivered delivery = %v, %v; want false", ok, err)
	}
	if _, err := st.RecordWebhookAttempt(ctx, id, webhook.Attempt{Status: "lost"}); err == nil {
		t.Fatal("unknown status accepted")
	}
	if _, err := st.GetWebhookDelivery(ctx, "0190a0a0-0000-7000-8000-0000000000ff"); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("missing delivery: %v", err)
	}
}

// Two jobs of a batch finishing at the same moment, in two transactions,
// must still complete the batch, with one delivery.
func TestWebhookConcurrentCompletion(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	const batches = 15
	type pair struct {
		b  *jobs.Batch
		js []*jobs.Job
	}
	var all []pair
	for range batches {
		b, js := newWebhookBatch(t, st, 2)
		for _, j := range js {
			if _, _, err := st.StartJob(ctx, j.ID); err != nil {
				t.Fatal(err)
			}
		}
		all = append(all, pair{b, js})
	}
	res := &jobs.Result{HTTPStatus: 200, TimingsMS: map[string]int64{}}
	for _, p := range all {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, j := range p.js {
			wg.Go(func() {
				<-start
				if ok, err := st.CompleteJob(ctx, j.ID, 1, res, nil); err != nil || !ok {
					t.Errorf("CompleteJob = %v, %v", ok, err)
				}
			})
		}
		close(start)
		wg.Wait()
	}
	for _, p := range all {
		got, _ := st.GetBatch(ctx, p.b.ID)
		ds := deliveries(t, st, p.b.ID)
		if got.FinishedAt == nil || len(ds) != 1 {
			t.Errorf("batch %s: finished_at %v, %d deliveries; want finished with one delivery", p.b.ID, got.FinishedAt, len(ds))
		}
	}
}

func TestWebhookReconcile(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	b, js := newWebhookBatch(t, st, 1)
	succeed(t, st, js[0].ID)
	id := deliveries(t, st, b.ID)[0].ID
	q := &webhookQueue{}
	rec := &jobs.Reconciler{Repo: st, Queue: nopQueue{}, Grace: time.Nanosecond,
		Steps: []jobs.ReconcileStep{webhook.ReconcileStep(st, q, time.Nanosecond)}}
	time.Sleep(5 * time.Millisecond)
	if n, err := rec.Once(ctx); err != nil || n != 1 || len(q.enqueued) != 1 || q.enqueued[0] != id {
		t.Fatalf("reconcile = %d, %v, enqueued %v; want the pending delivery enqueued", n, err, q.enqueued)
	}
	// A task the queue is retrying is left alone.
	q.state = "retry"
	if n, err := rec.Once(ctx); err != nil || n != 0 || len(q.enqueued) != 1 {
		t.Fatalf("reconcile with a retrying task = %d, %v, enqueued %v", n, err, q.enqueued)
	}
	// A task the queue gave up on fails the delivery.
	q.state = "archived"
	if n, err := rec.Once(ctx); err != nil || n != 1 {
		t.Fatalf("reconcile archived = %d, %v", n, err)
	}
	d, _ := st.GetWebhookDelivery(ctx, id)
	if d.Status != webhook.DeliveryFailed || d.LastError != "the queue gave up on the delivery: boom" || d.Attempts != 0 {
		t.Fatalf("after archived task: %+v", d)
	}
}

type webhookQueue struct {
	state    string
	enqueued []string
}

func (q *webhookQueue) Submit(_ context.Context, p jobs.Payload, _ time.Duration) error {
	q.enqueued = append(q.enqueued, p.(webhook.Payload).DeliveryID)
	return nil
}

func (q *webhookQueue) PayloadState(context.Context, jobs.Payload) (string, string, error) {
	return q.state, "boom", nil
}
