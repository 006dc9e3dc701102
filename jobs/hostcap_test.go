package jobs_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/jobs"
)

// fakeSlots hands out up to free slots per call and records what it was asked.
type fakeSlots struct {
	mu       sync.Mutex
	free     int
	held     int
	hosts    []string
	limits   []int
	waits    []time.Duration
	released int
}

func (f *fakeSlots) Acquire(_ context.Context, host string, limit int, wait time.Duration) (func(), bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hosts, f.limits, f.waits = append(f.hosts, host), append(f.limits, limit), append(f.waits, wait)
	if f.free == 0 {
		return nil, false, nil
	}
	f.free--
	f.held++
	var once sync.Once
	return func() {
		once.Do(func() { f.mu.Lock(); f.held--; f.released++; f.mu.Unlock() })
	}, true, nil
}

func TestHandlerHostBusyUsesNoAttempt(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := jobs.WithLastAttempt(context.Background(), false)
	slots := &fakeSlots{}
	e.h.Hosts, e.h.HostConcurrency = slots, 3
	j := &jobs.Job{ID: jobs.NewID(), BatchID: jobs.NewID(), URL: "https://A.example/docs", Name: "a",
		Options: jobs.DefaultOptions(), Status: jobs.StatusQueued}
	j.Options.HostConcurrency = 2 // the job's own cap wins over the default
	e.store.add(j)
	e.renderer.result = &capture.Result{HTTPStatus: 200, ContentType: "text/html", Timings: map[string]int64{}}

	err := e.h.Capture(ctx, jobs.CapturePayload{JobID: j.ID})
	if !jobs.IsHostBusy(err) {
		t.Fatalf("Capture with the host at its cap = %v, want ErrHostBusy", err)
	}
	got, _ := e.store.GetJob(ctx, j.ID)
	if got.Status != jobs.StatusQueued || got.Attempts != 0 {
		t.Fatalf("after a busy host: status %s, attempts %d; want queued, 0", got.Status, got.Attempts)
	}
	if slots.hosts[0] != "a.example" || slots.limits[0] != 2 || slots.waits[0] != jobs.DefaultHostWait {
		t.Fatalf("asked for host %q limit %d wait %s", slots.hosts[0], slots.limits[0], slots.waits[0])
	}

	// A slot came free: the job runs and gives the slot back.
	slots.free = 1
	if err := e.h.Capture(ctx, jobs.CapturePayload{JobID: j.ID}); err != nil {
		t.Fatal(err)
	}
	got, _ = e.store.GetJob(ctx, j.ID)
	if got.Status != jobs.StatusSucceeded || got.Attempts != 1 || slots.held != 0 || slots.released != 1 {
		t.Fatalf("after a free slot: status %s, attempts %d, held %d, released %d", got.Status, got.Attempts, slots.held, slots.released)
	}

	// On the queue's last attempt a hand-back would end the task: it waits up
	// to the job's timeout instead.
	j2 := queuedJob(e, 0)
	_ = e.h.Capture(jobs.WithLastAttempt(context.Background(), true), jobs.CapturePayload{JobID: j2.ID})
	if w := slots.waits[len(slots.waits)-1]; w != j2.Options.JobTimeout() || slots.limits[len(slots.limits)-1] != 3 {
		t.Fatalf("last attempt waited %s with limit %d; want the job timeout %s and the default 3", w, slots.limits[len(slots.limits)-1], j2.Options.JobTimeout())
	}
}

// firstSlots is fakeSlots with AcquireFirst, recording which of the two a call used.
type firstSlots struct {
	fakeSlots
	first []bool
}

func (f *firstSlots) Acquire(ctx context.Context, host string, limit int, wait time.Duration) (func(), bool, error) {
	f.first = append(f.first, false)
	return f.fakeSlots.Acquire(ctx, host, limit, wait)
}

func (f *firstSlots) AcquireFirst(ctx context.Context, host string, limit int, wait time.Duration) (func(), bool, error) {
	f.first = append(f.first, true)
	return f.fakeSlots.Acquire(ctx, host, limit, wait)
}

// An interactive job asks for its host's slot first in line, with the
// headroom above the cap; a batch job of the same host asks within the cap.
func TestHandlerInteractiveHostHeadroom(t *testing.T) {
	t.Parallel()
	e := setup(t)
	slots := &firstSlots{fakeSlots: fakeSlots{free: 2}}
	e.h.Hosts, e.h.HostConcurrency, e.h.InteractiveHostHeadroom = slots, 3, 1
	e.renderer.result = &capture.Result{HTTPStatus: 200, ContentType: "text/html", Timings: map[string]int64{}}
	batch, sync := queuedJob(e, 0), queuedJob(e, 0)
	ctx := jobs.WithLastAttempt(context.Background(), false)
	if err := e.h.Capture(ctx, jobs.CapturePayload{JobID: batch.ID}); err != nil {
		t.Fatal(err)
	}
	if err := e.h.Capture(capture.WithInteractive(ctx), jobs.CapturePayload{JobID: sync.ID}); err != nil {
		t.Fatal(err)
	}
	if len(slots.first) != 2 || slots.first[0] || slots.limits[0] != 3 || !slots.first[1] || slots.limits[1] != 4 {
		t.Fatalf("asked first %v with limits %v; want a batch job's Acquire with 3, then AcquireFirst with 3+1", slots.first, slots.limits)
	}
	if w := slots.waits[1]; w != sync.Options.JobTimeout() {
		t.Fatalf("the interactive job waits up to %s for its slot, want its timeout %s (never handed back)", w, sync.Options.JobTimeout())
	}
}

func TestHostConcurrencyOption(t *testing.T) {
	t.Parallel()
	body := `{"targets": [{"url": "https://a.example/", "options": {"host_concurrency": 20}}], "options": {"host_concurrency": 16}}`
	_, _, _, err := setup(t).svc.Submit(context.Background(), jobs.Submission{Body: []byte(body)})
	var ve *jobs.ValidationError
	if !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Field != "targets[0].options.host_concurrency" {
		t.Fatalf("Submit = %v; want one error naming targets[0].options.host_concurrency", err)
	}
	for _, bad := range []string{`0`, `1.5`, `1001`, `"2"`} {
		_, _, _, err := setup(t).svc.Submit(context.Background(), jobs.Submission{Body: []byte(`{"urls": ["https://a.example/"], "options": {"host_concurrency": ` + bad + `}}`)})
		if !errors.As(err, &ve) || ve.Fields[0].Field != "options.host_concurrency" {
			t.Errorf("host_concurrency %s: %v", bad, err)
		}
	}
	_, js, _, err := setup(t).svc.Submit(context.Background(), jobs.Submission{Body: []byte(`{"urls": ["https://a.example/"], "options": {"host_concurrency": 3}}`)})
	if err != nil || js[0].Options.HostConcurrency != 3 {
		t.Fatalf("host_concurrency 3: %v, %+v", err, js)
	}
}
