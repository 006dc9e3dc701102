package jobs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/jobs"
)

func TestReconcilerJobs(t *testing.T) {
	t.Parallel()
	const timeout = 10 * time.Second // the job's timeout_ms
	tests := []struct {
		name      string
		status    jobs.JobStatus
		age       time.Duration // since the job's last update
		task      *task         // nil: the queue has no task for the job
		wantActed int
		want      string // the job's status and error code afterwards
		wantMsg   string
		wantTask  *task
	}{
		{name: "queued without task is enqueued", status: jobs.StatusQueued, age: time.Minute,
			wantActed: 1, want: "queued ", wantTask: &task{State: "pending", Timeout: timeout}},
		{name: "queued within grace is left alone", status: jobs.StatusQueued, age: 10 * time.Second,
			want: "queued "},
		{name: "queued with pending task is left alone", status: jobs.StatusQueued, age: time.Minute,
			task: &task{State: "pending", Timeout: time.Hour}, want: "queued ", wantTask: &task{State: "pending", Timeout: time.Hour}},
		{name: "running with active task is left alone", status: jobs.StatusRunning, age: time.Hour,
			task: &task{State: "active"}, want: "running ", wantTask: &task{State: "active"}},
		{name: "running without task within timeout and slack is left alone", status: jobs.StatusRunning, age: timeout + jobs.TaskSlack - 5*time.Second,
			want: "running "},
		{name: "running without task past timeout and slack is requeued", status: jobs.StatusRunning, age: timeout + jobs.TaskSlack + 5*time.Second,
			wantActed: 1, want: "queued ", wantTask: &task{State: "pending", Timeout: timeout}},
		{name: "archived task fails the job", status: jobs.StatusQueued, age: time.Minute,
			task: &task{State: "archived", LastErr: "browser crashed"}, wantActed: 1, want: "failed worker_lost",
			wantMsg: "the worker stopped before finishing the job: browser crashed", wantTask: &task{State: "archived", LastErr: "browser crashed"}},
		{name: "completed task fails the running job", status: jobs.StatusRunning, age: time.Minute,
			task: &task{State: "completed"}, wantActed: 1, want: "failed worker_lost",
			wantMsg: "the worker stopped before finishing the job", wantTask: &task{State: "completed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			ctx := context.Background()
			opts := jobs.DefaultOptions()
			opts.TimeoutMS = int(timeout / time.Millisecond)
			j := &jobs.Job{ID: jobs.NewID(), BatchID: jobs.NewID(), URL: "https://a.example/", Options: opts,
				Status: tt.status, Attempts: 2, UpdatedAt: time.Now().Add(-tt.age)}
			e.store.add(j)
			if tt.task != nil {
				e.queue.set(j.ID, *tt.task)
			}

			acted, err := e.rec.Once(ctx)
			if err != nil || acted != tt.wantActed {
				t.Fatalf("Once = %d, %v; want %d, nil", acted, err, tt.wantActed)
			}
			got := e.store.job(t, j.ID)
			if diff := cmp.Diff(tt.want, string(got.Status)+" "+got.ErrorCode); diff != "" {
				t.Errorf("job status and code (-want +got):\n%s", diff)
			}
			if got.ErrorMessage != tt.wantMsg {
				t.Errorf("error message = %q, want %q", got.ErrorMessage, tt.wantMsg)
			}
			var gotTask *task
			if tk, ok := e.queue.snapshot()[j.ID]; ok {
				gotTask = &tk
			}
			if diff := cmp.Diff(tt.wantTask, gotTask); diff != "" {
				t.Errorf("task (-want +got):\n%s", diff)
			}
		})
	}
}

// One job's queue error is reported with its id; the other jobs are still settled.
func TestReconcilerJobErrorDoesNotStopOthers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	old := time.Now().Add(-time.Hour)
	bad := &jobs.Job{ID: jobs.NewID(), BatchID: "b", Options: jobs.DefaultOptions(), Status: jobs.StatusQueued, UpdatedAt: old}
	good := &jobs.Job{ID: jobs.NewID(), BatchID: "b", Options: jobs.DefaultOptions(), Status: jobs.StatusQueued, UpdatedAt: old.Add(time.Second)}
	e.store.add(bad, good)
	errRedis := errors.New("redis: i/o timeout")
	e.queue.stateErr = map[string]error{bad.ID: errRedis}

	acted, err := e.rec.Once(context.Background())
	if !errors.Is(err, errRedis) || err == nil || !strings.Contains(err.Error(), "job "+bad.ID) {
		t.Errorf("Once error = %v, want the queue's error naming job %s", err, bad.ID)
	}
	if acted != 1 {
		t.Errorf("acted = %d, want 1", acted)
	}
	if _, ok := e.queue.snapshot()[good.ID]; !ok {
		t.Errorf("the other job was not enqueued")
	}
}

func TestReconcilerSteps(t *testing.T) {
	t.Parallel()
	errStep := errors.New("smtp down")
	errList := errors.New("db gone")
	tests := []struct {
		name          string
		unfinishedErr error
		steps         []stepResult
		wantActed     int
		wantErrs      []error
		wantErrText   []string
		wantRan       []string
	}{
		{name: "acted adds up", steps: []stepResult{{"webhooks", 2, nil}, {"comparisons", 3, nil}},
			wantActed: 2 + 3 + 1, wantRan: []string{"webhooks", "comparisons"}},
		{name: "a failing step does not stop the next", steps: []stepResult{{"webhooks", 1, errStep}, {"comparisons", 3, nil}},
			wantActed: 1 + 3 + 1, wantErrs: []error{errStep}, wantErrText: []string{"webhooks: smtp down"},
			wantRan: []string{"webhooks", "comparisons"}},
		{name: "a failing jobs pass does not stop the steps", unfinishedErr: errList,
			steps:     []stepResult{{"webhooks", 0, errStep}, {"comparisons", 4, nil}},
			wantActed: 4, wantErrs: []error{errList, errStep}, wantErrText: []string{"list unfinished jobs: db gone", "webhooks: smtp down"},
			wantRan: []string{"webhooks", "comparisons"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			// One queued job without a task: the jobs pass acts on it.
			e.store.add(&jobs.Job{ID: jobs.NewID(), BatchID: "b", Options: jobs.DefaultOptions(), Status: jobs.StatusQueued,
				UpdatedAt: time.Now().Add(-time.Hour)})
			e.store.unfinishedErr = tt.unfinishedErr
			var ran []string
			for _, s := range tt.steps {
				e.rec.Steps = append(e.rec.Steps, jobs.ReconcileStep{Name: s.name, Run: func(context.Context) (int, error) {
					ran = append(ran, s.name)
					return s.acted, s.err
				}})
			}

			acted, err := e.rec.Once(context.Background())
			if acted != tt.wantActed {
				t.Errorf("acted = %d, want %d", acted, tt.wantActed)
			}
			if diff := cmp.Diff(tt.wantRan, ran); diff != "" {
				t.Errorf("steps run (-want +got):\n%s", diff)
			}
			for _, want := range tt.wantErrs {
				if !errors.Is(err, want) {
					t.Errorf("Once error = %v, want it to wrap %v", err, want)
				}
			}
			for _, text := range tt.wantErrText {
				if err == nil || !strings.Contains(err.Error(), text) {
					t.Errorf("Once error = %v, want it to say %q", err, text)
				}
			}
			if len(tt.wantErrs) == 0 && err != nil {
				t.Errorf("Once error = %v, want nil", err)
			}
		})
	}
}

type stepResult struct {
	name  string
	acted int
	err   error
}
