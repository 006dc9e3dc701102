package jobs

import (
	"context"
	"time"
)

// Repository is the system of record for batches, jobs and artifacts.
// store.Store implements it on Postgres.
type Repository interface {
	// CreateBatch writes the batch and all its jobs in one transaction.
	CreateBatch(ctx context.Context, b *Batch, jobs []*Job) error
	GetBatch(ctx context.Context, id string) (*Batch, error)
	// ListBatches returns batches newest first; cursor is the last id seen.
	ListBatches(ctx context.Context, status string, limit int, cursor string) ([]*Batch, string, error)
	// ListJobs returns a batch's jobs in submission order, after cursor.
	ListJobs(ctx context.Context, batchID, status string, limit int, cursor string) ([]*Job, string, error)
	GetJob(ctx context.Context, id string) (*Job, error)
	ListArtifacts(ctx context.Context, jobID string) ([]*Artifact, error)
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
}

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
