package jobs

import (
	"context"
	"errors"
	"time"
)

// Repository is the system of record for batches, jobs and artifacts.
// store.Store implements it on Postgres.
type Repository interface {
	// CreateBatch writes the batch and all its jobs in one transaction. With
	// b.IdempotencyKey set it also claims the key; if another request holds it,
	// nothing is written and the error is ErrIdempotencyTaken.
	CreateBatch(ctx context.Context, b *Batch, jobs []*Job) error
	GetBatch(ctx context.Context, id string) (*Batch, error)
	// ListBatches returns batches newest first; cursor is the last id seen.
	// owner filters by API key id; AnyOwner lists every batch.
	ListBatches(ctx context.Context, owner, status string, limit int, cursor string) ([]*Batch, string, error)
	// FindIdempotency returns the batch created under (owner, key) and the hash of its
	// request body, or ErrNotFound.
	FindIdempotency(ctx context.Context, owner, key string) (batchID, requestHash string, err error)
	// CountUnfinished counts queued and running jobs of batches owned by owner.
	CountUnfinished(ctx context.Context, owner string) (int, error)
	// ListJobs returns a batch's jobs in submission order, after cursor.
	ListJobs(ctx context.Context, batchID, status string, limit int, cursor string) ([]*Job, string, error)
	GetJob(ctx context.Context, id string) (*Job, error)
	ListArtifacts(ctx context.Context, jobID string) ([]*Artifact, error)
	// FirstScreenshots returns each listed job's first screenshot (its preview), by job id.
	FirstScreenshots(ctx context.Context, jobIDs []string) (map[string]*Artifact, error)
	GetArtifact(ctx context.Context, id string) (*Artifact, error)

	// StartJob moves a queued (or abandoned running) job to running and
	// counts the attempt. A job that is already final is returned unchanged
	// with started=false.
	StartJob(ctx context.Context, id string) (job *Job, started bool, err error)
	// CompleteJob stores the result and artifacts and marks the job
	// succeeded, but only if attempt is still the job's current attempt.
	// ok=false means another attempt owns the job now.
	CompleteJob(ctx context.Context, id string, attempt int, result *Result, arts []*Artifact) (ok bool, err error)
	// FailJob records a failure of attempt. final=true marks the job failed;
	// otherwise it goes back to queued to wait for its retry.
	FailJob(ctx context.Context, id string, attempt int, e JobError, final bool) error
	// CancelBatch marks every queued job canceled and returns their ids.
	CancelBatch(ctx context.Context, id string) ([]string, error)
	// Unfinished lists queued or running jobs not updated since before.
	Unfinished(ctx context.Context, before time.Time, limit int) ([]JobRef, error)
	// Requeue puts a running job whose worker vanished back to queued.
	Requeue(ctx context.Context, id string) error
	Ping(ctx context.Context) error

	// Webhooks of batches and their deliveries (webhook.go).
	WebhookRepository
	// Visual regression: suites, runs, comparisons, baselines (regression.go).
	SuiteRepository
}

// AnyOwner makes ListBatches list every owner's batches (SNAPQ_AUTH=off).
const AnyOwner = "*"

// ErrIdempotencyTaken is CreateBatch's answer when a concurrent request
// claimed the same Idempotency-Key first.
var ErrIdempotencyTaken = errors.New("idempotency key already claimed")

// Queue carries jobs to workers. Queue (asynq) implements it.
type Queue interface {
	// Enqueue submits the job's task; enqueuing a job whose task already
	// exists is not an error (the task id is the job id).
	Enqueue(ctx context.Context, jobID string, timeout time.Duration) error
	// TaskState reports the queue's view of a job's task: "" when the queue
	// has no such task, otherwise asynq's state name and its last error.
	TaskState(ctx context.Context, jobID string) (state, lastErr string, err error)
	Delete(ctx context.Context, jobID string) error
}
