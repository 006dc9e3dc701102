package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/snapq/snapq/jobs"
)

// AsynqQueue carries every kind of task to workers on asynq; it implements
// jobs.Queue and the enqueue interfaces the features declare (Submit and
// PayloadState of their own payloads). How a task is queued is its kind's
// rule (tasks.go).
type AsynqQueue struct {
	client    *asynq.Client
	inspector *asynq.Inspector
	rdb       redis.UniversalClient // for republish; nil if the option makes another kind of client
	cfg       Config
}

var _ jobs.Queue = (*AsynqQueue)(nil)

// NewAsynqQueue builds a queue on a Redis connection option.
func NewAsynqQueue(conn asynq.RedisConnOpt, cfg Config) *AsynqQueue {
	if cfg.MaxRetry < 0 {
		cfg.MaxRetry = 0
	}
	rdb, _ := conn.MakeRedisClient().(redis.UniversalClient)
	return &AsynqQueue{client: asynq.NewClient(conn), inspector: asynq.NewInspector(conn), rdb: rdb, cfg: cfg}
}

// Close releases the Redis connections.
func (q *AsynqQueue) Close() error {
	err := errors.Join(q.client.Close(), q.inspector.Close())
	if q.rdb != nil {
		err = errors.Join(err, q.rdb.Close())
	}
	return err
}

// Submit enqueues a task for p; a task that already exists is not an error
// (re-enqueueing is how the reconciler and retries stay idempotent).
// timeout bounds a kind whose table entry gives none.
func (q *AsynqQueue) Submit(ctx context.Context, p jobs.Payload, timeout time.Duration) error {
	task, opts, err := NewTask(p, timeout, q.cfg)
	if err != nil {
		return err
	}
	_, err = q.client.EnqueueContext(ctx, task, opts...)
	if errors.Is(err, asynq.ErrTaskIDConflict) || errors.Is(err, asynq.ErrDuplicateTask) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("enqueue %s %s: %w", p.Kind(), p.ID(), err)
	}
	return nil
}

// Enqueue implements jobs.Queue.
func (q *AsynqQueue) Enqueue(ctx context.Context, p jobs.CapturePayload) error {
	return q.Submit(ctx, p, p.Timeout()+jobs.TaskSlack)
}

// PayloadState reports the asynq state of p's task ("" when the queue has
// none) and its last error: the reconcile passes of comparisons, webhook
// deliveries and notifications ask it of the payload they would enqueue.
func (q *AsynqQueue) PayloadState(_ context.Context, p jobs.Payload) (string, string, error) {
	r := p.Rule()
	return q.taskState(r.Queue, p.ID(), r.IDPrefix+p.ID())
}

// TaskState implements jobs.Queue.
func (q *AsynqQueue) TaskState(_ context.Context, jobID string) (string, string, error) {
	state, lastErr, err := q.taskState(QueueCapture, jobID, jobID)
	if state != "" || err != nil {
		return state, lastErr, err
	}
	return q.taskState(QueueInteractive, jobID, jobID) // the interactive lane's (lane.go)
}

// taskState reports the asynq state and last error of task id, routed by the
// payload id key to its shard of kind; "" when the queue has no such task.
// When sharded, a task not in its shard is looked for in the kind's plain
// queue too (enqueued before sharding was turned on).
func (q *AsynqQueue) taskState(kind, key, id string) (string, string, error) {
	queues := []string{q.cfg.QueueFor(kind, key)}
	if queues[0] != kind {
		queues = append(queues, kind)
	}
	for _, queue := range queues {
		info, err := q.inspector.GetTaskInfo(queue, id)
		if errors.Is(err, asynq.ErrQueueNotFound) && q.republish(queue) {
			info, err = q.inspector.GetTaskInfo(queue, id)
		}
		if errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
			continue
		}
		if err != nil {
			return "", "", fmt.Errorf("inspect %s task %s: %w", queue, id, err)
		}
		return info.State.String(), info.LastErr, nil
	}
	return "", "", nil
}

// allQueuesKey is asynq's registry of queue names (internal/base.AllQueues).
// The Inspector answers ErrQueueNotFound for any task of a queue missing
// from it.
const allQueuesKey = "asynq:queues"

// republish puts queue back into asynq's registry and reports whether it did.
// An asynq.Client registers a queue once per process (it remembers having
// done so), so after Redis lost its data (FLUSHALL, a failover to an empty
// replica) the queue stays unregistered while tasks are enqueued into it
// again, and every task looks missing: the reconciler then re-enqueues every
// unfinished job on every pass and never sees an archived task. Registering
// an empty queue is harmless; workers read their queues by name anyway.
func (q *AsynqQueue) republish(queue string) bool {
	if q.rdb == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return q.rdb.SAdd(ctx, allQueuesKey, queue).Err() == nil
}

// Delete implements jobs.Queue. A missing task is not an error.
func (q *AsynqQueue) Delete(_ context.Context, jobID string) error {
	queues := []string{q.cfg.QueueFor(QueueCapture, jobID)}
	if queues[0] != QueueCapture {
		queues = append(queues, QueueCapture)
	}
	queues = append(queues, QueueInteractive) // lane.go
	for _, queue := range queues {
		err := q.inspector.DeleteTask(queue, jobID)
		if err != nil && !errors.Is(err, asynq.ErrTaskNotFound) && !errors.Is(err, asynq.ErrQueueNotFound) {
			return fmt.Errorf("delete task %s: %w", jobID, err)
		}
	}
	return nil
}
