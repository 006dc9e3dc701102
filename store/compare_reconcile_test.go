package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/snapq/snapq/internal/testenv"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/queue"
	"github.com/snapq/snapq/regression"
	"github.com/snapq/snapq/store"
)

// finishedCapture starts a manual run whose one capture job is final, and a
// queue on a leased Redis database.
func finishedCapture(t *testing.T) (*store.Store, *regression.Run, string, asynq.RedisClientOpt, *queue.AsynqQueue) {
	t.Helper()
	st := setup(t)
	g, s := newSuite(t, st)
	r, err := g.StartRun(context.Background(), s, regression.TriggerManual, nil, regression.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jobID := finishRunJob(t, st, r)
	rdb := testenv.Redis(t)
	redisOpt := asynq.RedisClientOpt{Addr: rdb.Addr, DB: rdb.DB}
	q := queue.NewAsynqQueue(redisOpt, queue.Config{})
	t.Cleanup(func() { _ = q.Close() })
	return st, r, jobID, redisOpt, q
}

// A run whose comparison task the queue archived (its retries exhausted) is
// not left running: the reconciler records the capture's comparison as an
// error carrying the task's last error, and the run settles.
func TestReconcileArchivedComparison(t *testing.T) {
	t.Parallel()
	st, r, jobID, redisOpt, q := finishedCapture(t)
	ctx := context.Background()

	// The after-final hook enqueues the comparison; every attempt fails until
	// the queue archives the task.
	if err := q.Submit(ctx, regression.ComparePayload{JobID: jobID}, 0); err != nil {
		t.Fatal(err)
	}
	archiveCompare(t, redisOpt, jobID)

	step := regression.ReconcileStep(st, q)
	if n, err := step.Run(ctx); err != nil || n != 1 {
		t.Fatalf("reconcile = %d, %v; want the archived comparison acted on", n, err)
	}
	got, err := st.GetRun(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != regression.RunError || got.FinishedAt == nil || got.Counts.Pending != 0 || got.Counts.Error != 1 {
		t.Fatalf("run after reconciling an archived comparison: status %s, finished %v, counts %+v; want error, finished",
			got.Status, got.FinishedAt, got.Counts)
	}
	if len(got.Comparisons) != 1 || got.Comparisons[0].Status != regression.CompareError ||
		!strings.Contains(got.Comparisons[0].Message, "database is down") {
		t.Fatalf("comparisons %+v; want one error naming the task's last error", got.Comparisons)
	}
	ds, err := st.ListWebhookDeliveries(ctx, r.BatchID)
	if err != nil || len(ds) != 1 || ds[0].Event != regression.EventRunCompleted {
		t.Fatalf("deliveries %+v, %v; want the run.completed one", ds, err)
	}
	// Settled: the next pass has nothing to do.
	if n, err := step.Run(ctx); err != nil || n != 0 {
		t.Fatalf("second reconcile = %d, %v; want nothing", n, err)
	}
}

// A comparison whose task is missing is enqueued; one the queue still holds is
// left alone.
func TestReconcileMissingComparison(t *testing.T) {
	t.Parallel()
	st, r, jobID, redisOpt, q := finishedCapture(t)
	ctx := context.Background()

	step := regression.ReconcileStep(st, q)
	if n, err := step.Run(ctx); err != nil || n != 1 {
		t.Fatalf("reconcile = %d, %v; want the comparison enqueued", n, err)
	}
	ins := asynq.NewInspector(redisOpt)
	defer ins.Close()
	info, err := ins.GetTaskInfo(queue.QueueRegression, "compare-"+jobID)
	if err != nil || info.State != asynq.TaskStatePending {
		t.Fatalf("compare task %+v, %v; want pending", info, err)
	}
	if n, err := step.Run(ctx); err != nil || n != 0 {
		t.Fatalf("reconcile with a pending task = %d, %v; want it left alone", n, err)
	}
	if got, _ := st.GetRun(ctx, r.ID); got.Status != regression.RunRunning {
		t.Fatalf("run %s; want running while its comparison is queued", got.Status)
	}
}

// finishRunJob completes the run's only capture job, finished a minute ago
// (past the reconciler's grace), and returns its id.
func finishRunJob(t *testing.T, st *store.Store, r *regression.Run) string {
	t.Helper()
	ctx := context.Background()
	js, _, err := st.ListJobs(ctx, r.BatchID, "", 10, "")
	if err != nil || len(js) != 1 {
		t.Fatalf("run jobs: %v, %v", js, err)
	}
	j, _, err := st.StartJob(ctx, js[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := st.CompleteJob(ctx, j.ID, j.Attempts, &jobs.Result{}, nil); !ok || err != nil {
		t.Fatalf("complete job: %v, %v", ok, err)
	}
	if err := st.ExecForTest(ctx, `UPDATE jobs SET finished_at = now() - interval '1 minute' WHERE id = $1`, j.ID); err != nil {
		t.Fatal(err)
	}
	return j.ID
}

// archiveCompare runs a worker whose comparisons always fail until the
// queue archives the job's compare task (every retry used).
func archiveCompare(t *testing.T, redisOpt asynq.RedisClientOpt, jobID string) {
	t.Helper()
	srv := asynq.NewServer(redisOpt, asynq.Config{
		Concurrency:              1,
		Queues:                   map[string]int{queue.QueueRegression: 1},
		RetryDelayFunc:           func(int, error, *asynq.Task) time.Duration { return time.Millisecond },
		DelayedTaskCheckInterval: 50 * time.Millisecond,
		TaskCheckInterval:        50 * time.Millisecond,
		LogLevel:                 asynq.FatalLevel,
	})
	mux := asynq.NewServeMux()
	queue.Register(mux, func(context.Context, regression.ComparePayload) error {
		return errors.New("load capture: database is down")
	})
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	ins := asynq.NewInspector(redisOpt)
	defer ins.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := ins.GetTaskInfo(queue.QueueRegression, "compare-"+jobID)
		if err == nil && info.State == asynq.TaskStateArchived {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("compare task not archived after 30s: %+v, %v", info, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
