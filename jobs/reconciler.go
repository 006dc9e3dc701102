package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/snapq/snapq/capture"
)

// Reconciler makes sure every accepted job reaches a worker: it re-enqueues
// dispatched queued jobs whose task is missing from Redis (enqueue failed
// after the dispatch committed, or Redis lost data) and settles running jobs
// whose task is gone. Held jobs, not dispatched yet, have no task by design:
// the Dispatcher enqueues them (ReconcileStore.Unfinished leaves them out). Features
// built on jobs (webhook deliveries, regression comparisons) hand it their
// own outbox passes as Steps; it runs them after its own, on one schedule.
type Reconciler struct {
	Repo   ReconcileStore
	Queue  Queue
	Logger *slog.Logger
	// Grace is how long a job may sit unchanged before it is checked;
	// default 30 s. Running jobs get their own timeout on top.
	Grace time.Duration
	// Steps run after the jobs pass on every round, in order.
	Steps []ReconcileStep
}

// ReconcileStep is one feature's pass of the reconciler: it returns how many
// things it acted on.
type ReconcileStep struct {
	Name string
	Run  func(ctx context.Context) (acted int, err error)
}

// DefaultGrace is the Reconciler's Grace when none is set.
const DefaultGrace = 30 * time.Second

// Run reconciles every interval until ctx ends.
func (r *Reconciler) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := r.Once(ctx); err != nil && ctx.Err() == nil {
			Log(r.Logger).Warn("reconcile", "err", err)
		} else if n > 0 {
			Log(r.Logger).Info("reconciled", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Once runs one pass of the jobs and of every step and returns how many
// things it acted on. A failing step does not stop the others.
func (r *Reconciler) Once(ctx context.Context) (int, error) {
	acted, err := r.jobs(ctx)
	errs := []error{err}
	for _, s := range r.Steps {
		n, err := s.Run(ctx)
		acted += n
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
		}
	}
	return acted, errors.Join(errs...)
}

func (r *Reconciler) jobs(ctx context.Context) (int, error) {
	grace := r.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	refs, err := r.Repo.Unfinished(ctx, time.Now().Add(-grace), 1000)
	if err != nil {
		return 0, fmt.Errorf("list unfinished jobs: %w", err)
	}
	acted := 0
	var errs []error
	for _, ref := range refs {
		did, err := r.one(ctx, ref)
		if did {
			acted++
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("job %s: %w", ref.ID, err))
		}
	}
	return acted, errors.Join(errs...)
}

func (r *Reconciler) one(ctx context.Context, ref JobRef) (bool, error) {
	state, lastErr, err := r.Queue.TaskState(ctx, ref.ID)
	if err != nil {
		return false, err
	}
	switch state {
	case "":
		// No task: enqueue again. A running job without a task lost its
		// worker and its task (Redis data loss); it starts over.
		job, err := r.Repo.GetJob(ctx, ref.ID)
		if err != nil {
			return false, err
		}
		if job.Terminal() {
			return false, nil
		}
		if job.Status == StatusRunning {
			if time.Since(job.UpdatedAt) < job.Options.JobTimeout()+TaskSlack {
				return false, nil // may still be in a worker's hands
			}
			if err := r.Repo.Requeue(ctx, ref.ID); err != nil {
				return false, err
			}
		}
		return true, r.Queue.Enqueue(ctx, CaptureTask(ref.ID, job.URL, job.Options))
	case "archived", "completed":
		// The queue gave up (or finished) without the job reaching a final
		// status, e.g. the worker died on the last attempt.
		job, err := r.Repo.GetJob(ctx, ref.ID)
		if err != nil || job.Terminal() {
			return false, err
		}
		msg := "the worker stopped before finishing the job"
		if lastErr != "" {
			msg += ": " + lastErr
		}
		// lastErr is the handler's last "code: message"; kept within the message cap.
		return true, r.Repo.FailJob(ctx, ref.ID, job.Attempts, JobError{Code: CodeWorkerLost, Message: capture.CapMessage(msg)}, job.Result, true)
	default:
		return false, nil
	}
}
