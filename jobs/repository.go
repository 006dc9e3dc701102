package jobs

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/snapq/snapq/artifacts"
)

// The interfaces jobs consumes are declared here, each with the methods its
// consumer calls; store.Store implements them all (with compile-time guards
// in store). Readers at the edge (web) declare their own.

// BatchStore is what Service needs: batches written and read whole.
type BatchStore interface {
	// CreateBatch writes the batch and all its jobs in one transaction. With
	// b.IdempotencyKey set it also claims the key; if another request holds it,
	// nothing is written and the error is ErrIdempotencyTaken.
	CreateBatch(ctx context.Context, b *Batch, jobs []*Job) error
	GetBatch(ctx context.Context, id string) (*Batch, error)
	// FindIdempotency returns the batch created under (owner, key) and the hash of its
	// request body, or ErrNotFound.
	FindIdempotency(ctx context.Context, owner, key string) (batchID, requestHash string, err error)
	// CountUnfinished counts queued and running jobs of batches owned by owner.
	CountUnfinished(ctx context.Context, owner string) (int, error)
	// ListJobs returns a batch's jobs in submission order, after cursor.
	ListJobs(ctx context.Context, batchID string, status JobStatus, limit int, cursor string) ([]*Job, string, error)
	// CancelBatch marks every queued job canceled and returns their ids.
	CancelBatch(ctx context.Context, id string) ([]string, error)
}

// JobStore is what Handler needs: one job's attempt started and settled,
// each in as few round trips as the store can (a captured page costs at
// most 4). Each method's error wraps ErrUnavailable when the store could not
// be reached (the task then waits for it without using a retry).
type JobStore interface {
	// GetJob reads a job (the host cap needs its URL before it starts, when
	// the task's payload does not carry its host).
	GetJob(ctx context.Context, id string) (*Job, error)
	// StartJob moves a queued (or abandoned running) job to running, counts
	// the attempt and clears the result an earlier attempt left. A job that is already final is returned unchanged
	// with started=false.
	StartJob(ctx context.Context, id string) (job *Job, started bool, err error)
	// CompleteAttempt stores the result and artifacts and marks the job
	// succeeded, but only if attempt is still the job's current attempt
	// (Settled.Current=false: another attempt owns the job now, nothing was
	// written).
	CompleteAttempt(ctx context.Context, id string, attempt int, result *Result, arts []*Artifact) (Settled, error)
	// FailAttempt records a failure of attempt. final=true marks the job
	// failed; otherwise it goes back to queued to wait for its retry. result
	// is what the attempt found before it failed (its log, ending with the
	// failed step); it replaces the job's result, nil clearing it. A non-nil
	// kept (only with final) replaces the job's artifact rows: the
	// checkpoints a failed journey reached (Options.KeepCheckpoints).
	FailAttempt(ctx context.Context, id string, attempt int, e JobError, result *Result, final bool, kept []*Artifact) (Settled, error)
}

// Settled is what the store reports with an attempt's outcome, written in
// the same transaction, so the after-final hooks need not read it again.
type Settled struct {
	// Current: the attempt was still the job's and its outcome was written.
	Current bool
	// Known: the store filled the fields below. Without it (a store or a
	// path that does not tell) the hooks look for themselves.
	Known bool
	// BatchFinished: this outcome finished the job's batch.
	BatchFinished bool
	// Deliveries are the pending webhook deliveries the outcome created
	// (the batch's completion), to enqueue now.
	Deliveries []string
	// RunCapture: the job is a capture of a regression run (its comparison
	// is due once it is final); Capture says which.
	RunCapture bool
	Capture    RunCaptureRef
}

// RunCaptureRef is which capture of a regression run a job is (regression's
// CaptureKey and its run): the compare task carries it, so the comparison
// does not look it up again.
type RunCaptureRef struct {
	RunID, Target, Viewport string
	// JobID is the run's capture; ReferenceJobID, in an environment pair
	// run, the capture of the same target on the reference origin.
	JobID, ReferenceJobID string
}

// ReconcileStore is what Reconciler needs: the unfinished jobs and a way to
// settle each.
type ReconcileStore interface {
	// Unfinished lists dispatched queued or running jobs not updated since
	// before. Held jobs (not dispatched yet) are the Dispatcher's: their
	// missing task is not a loss.
	Unfinished(ctx context.Context, before time.Time, limit int) ([]JobRef, error)
	GetJob(ctx context.Context, id string) (*Job, error)
	// Requeue puts a running job whose worker vanished back to queued.
	Requeue(ctx context.Context, id string) error
	// FailJob is JobStore's FailAttempt without checkpoints or settlement.
	FailJob(ctx context.Context, id string, attempt int, e JobError, result *Result, final bool) error
}

// AnyOwner makes a listing of batches or suites list every owner's
// (SNAPQ_AUTH=off).
const AnyOwner = "*"

// ErrIdempotencyTaken is CreateBatch's answer when a concurrent request
// claimed the same Idempotency-Key first.
var ErrIdempotencyTaken = errors.New("idempotency key already claimed")

// Queue carries jobs to workers. AsynqQueue implements it.
type Queue interface {
	// Enqueue submits a job's task (CaptureTask); enqueuing a job whose task
	// already exists is not an error (the task id is the job id). Its time
	// limit is the job's timeout (p.Timeout) and TaskSlack.
	Enqueue(ctx context.Context, p CapturePayload) error
	// TaskState reports the queue's view of a job's task: "" when the queue
	// has no such task, otherwise asynq's state name and its last error.
	TaskState(ctx context.Context, jobID string) (state, lastErr string, err error)
	Delete(ctx context.Context, jobID string) error
}

// ObjectLister lists and deletes stored objects (artifacts.Store): the
// Handler deletes what earlier attempts of a job left with it.
type ObjectLister interface {
	List(ctx context.Context, prefix, startAfter string, limit int) ([]artifacts.Object, error)
	Delete(ctx context.Context, key string) error
}

// Bookkeeping returns a context for writing down an outcome: it outlives
// ctx's cancel (a shutdown or the task's deadline must not leave a row
// half-settled) but is bounded by its own 10 seconds.
func Bookkeeping(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), BookkeepingTimeout)
}

// BookkeepingTimeout bounds the writes of Bookkeeping.
const BookkeepingTimeout = 10 * time.Second

// Log returns l, or the default logger when l is nil.
func Log(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.Default()
}
