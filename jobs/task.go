package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hibiken/asynq"
)

// Task kinds are stable strings on the wire, never Go type names.
const KindCapture = "capture:page"

// QueueCapture is the asynq queue capture tasks run on.
const QueueCapture = "capture"

// taskSlack is added to a job's own timeout for the wait for a free browser
// tab, uploads and bookkeeping.
const taskSlack = 2 * time.Minute

// CapturePayload is the payload of a capture:page task.
type CapturePayload struct {
	JobID string `json:"job_id"`
}

// Kind implements the task-kind convention.
func (CapturePayload) Kind() string { return KindCapture }

// QueueConfig configures the asynq side of jobs.
type QueueConfig struct {
	MaxRetry int // retries after the first attempt; default 3
	// WebhookMaxRetry is the retries of a webhook delivery after its first
	// attempt (SNAPQ_WEBHOOK_MAX_RETRY, default 8; 0 here means none).
	WebhookMaxRetry int
}

// AsynqQueue implements Queue on asynq.
type AsynqQueue struct {
	client    *asynq.Client
	inspector *asynq.Inspector
	cfg       QueueConfig
}

var _ Queue = (*AsynqQueue)(nil)

// NewAsynqQueue builds a queue on a Redis connection option.
func NewAsynqQueue(redis asynq.RedisConnOpt, cfg QueueConfig) *AsynqQueue {
	if cfg.MaxRetry < 0 {
		cfg.MaxRetry = 0
	}
	return &AsynqQueue{client: asynq.NewClient(redis), inspector: asynq.NewInspector(redis), cfg: cfg}
}

// Close releases the Redis connections.
func (q *AsynqQueue) Close() error {
	err := q.client.Close()
	if ierr := q.inspector.Close(); err == nil {
		err = ierr
	}
	return err
}

// Enqueue implements Queue.
func (q *AsynqQueue) Enqueue(ctx context.Context, jobID string, timeout time.Duration) error {
	return q.enqueue(ctx, KindCapture, CapturePayload{JobID: jobID}, jobID,
		asynq.Queue(QueueCapture), asynq.MaxRetry(q.cfg.MaxRetry), asynq.Timeout(timeout+taskSlack))
}

// enqueue submits a task whose id is id; a task that already exists is not an
// error (re-enqueueing is how the reconciler and retries stay idempotent).
func (q *AsynqQueue) enqueue(ctx context.Context, kind string, payload any, id string, opts ...asynq.Option) error {
	raw, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	_, err = q.client.EnqueueContext(ctx, asynq.NewTask(kind, raw), append(opts, asynq.TaskID(id))...)
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("enqueue %s %s: %w", kind, id, err)
	}
	return nil
}

// TaskState implements Queue.
func (q *AsynqQueue) TaskState(_ context.Context, jobID string) (string, string, error) {
	return q.taskState(QueueCapture, jobID)
}

// taskState reports a task's asynq state and last error; "" when the queue
// has no such task.
func (q *AsynqQueue) taskState(queue, id string) (string, string, error) {
	info, err := q.inspector.GetTaskInfo(queue, id)
	if errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("inspect %s task %s: %w", queue, id, err)
	}
	return info.State.String(), info.LastErr, nil
}

// Delete implements Queue. A missing task is not an error.
func (q *AsynqQueue) Delete(_ context.Context, jobID string) error {
	err := q.inspector.DeleteTask(QueueCapture, jobID)
	if err == nil || errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
		return nil
	}
	return fmt.Errorf("delete task %s: %w", jobID, err)
}

// RetryDelay returns asynq's RetryDelayFunc: exponential from base, capped
// at 5 minutes, with up to 20% jitter.
func RetryDelay(base time.Duration) asynq.RetryDelayFunc {
	if base <= 0 {
		base = 10 * time.Second
	}
	return func(n int, _ error, _ *asynq.Task) time.Duration {
		d := base
		for i := 0; i < n && d < 5*time.Minute; i++ {
			d *= 2
		}
		d = min(d, 5*time.Minute)
		return d + time.Duration(rand.Int64N(int64(d)/5+1))
	}
}
