package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/hibiken/asynq"

	"github.com/snapq/snapq/jobs"
)

// The interactive lane. Captures somebody waits for (POST /v1/capture, the
// Browserless-compatible endpoints, the MCP tools) go to their own queue,
// QueueInteractive, which every worker serves with an asynq server of its own
// (its reserved slots), so they are never behind the FIFO of the capture
// queue. The queue is not sharded: it holds at most the lane's dispatch depth.

// QueueInteractive is the interactive lane's queue.
const QueueInteractive = "interactive"

var _ jobs.LaneQueue = (*AsynqQueue)(nil)

// EnqueueInteractive implements jobs.LaneQueue: the capture task of jobID on
// the interactive queue.
func (q *AsynqQueue) EnqueueInteractive(ctx context.Context, p jobs.CapturePayload) error {
	task, opts, err := NewTask(p, p.Timeout()+jobs.TaskSlack, q.cfg)
	if err != nil {
		return err
	}
	opts = append(opts, asynq.Queue(QueueInteractive)) // the last Queue option wins
	_, err = q.client.EnqueueContext(ctx, task, opts...)
	if errors.Is(err, asynq.ErrTaskIDConflict) || errors.Is(err, asynq.ErrDuplicateTask) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("enqueue interactive %s: %w", p.JobID, err)
	}
	return nil
}

// InteractiveConcurrency sums the task slots of the servers that serve the
// interactive queue (each worker's reserved lane): the lane's dispatch depth.
func (q *AsynqQueue) InteractiveConcurrency(context.Context) (int, error) {
	servers, err := q.inspector.Servers()
	if err != nil {
		return 0, fmt.Errorf("list workers: %w", err)
	}
	n := 0
	for _, s := range servers {
		if _, ok := s.Queues[QueueInteractive]; ok {
			n += s.Concurrency
		}
	}
	return n, nil
}
