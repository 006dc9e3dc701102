package queue

import (
	"context"
	"fmt"
)

// FleetConcurrency sums the task concurrency of the asynq servers (workers)
// that serve the capture queue, as they announced it in Redis (each server
// refreshes its entry every few seconds; a dead one's expires). The
// dispatcher derives its depth from it (jobs.FleetDepth).
func (q *AsynqQueue) FleetConcurrency(context.Context) (int, error) {
	servers, err := q.inspector.Servers()
	if err != nil {
		return 0, fmt.Errorf("list workers: %w", err)
	}
	n := 0
	for _, s := range servers {
		if _, ok := s.Queues[QueueCapture]; ok {
			n += s.Concurrency
		}
	}
	return n, nil
}
