package web

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/queue"
)

// Queue views. The queues are shared by every tenant, so what an API key may
// see of them is limited (issue 12):
//
//   - GET /v1/queues, for any key: counts per kind of queue (capture,
//     regression, webhooks, reports) summed over its shards; no task, payload or
//     error of anyone is listed.
//   - /admin/queues (asynqmon), which lists tasks with their payloads and
//     errors: only with the admin token (SNAPQ_ADMIN_TOKEN), never with an
//     ordinary API key. Without auth (loopback only) it stays open.

// QueueCounts is one kind of queue summed over its shards.
type QueueCounts struct {
	Name      string `json:"name"`   // capture, regression, webhooks or reports
	Shards    int    `json:"shards"` // the Redis queues it is split into
	Pending   int    `json:"pending"`
	Active    int    `json:"active"`
	Scheduled int    `json:"scheduled"`
	Retry     int    `json:"retry"`
	Archived  int    `json:"archived"`
	// LatencySeconds is how long the oldest pending task of any shard has waited.
	LatencySeconds float64 `json:"latency_seconds"`
}

// queueList is the body of GET /v1/queues.
type queueList struct {
	Queues []QueueCounts `json:"queues"`
}

// ReadQueueCounts reads each kind's queues (every shard, and the plain
// queue workers still drain) and sums them. A queue nothing was enqueued to
// yet counts 0.
func ReadQueueCounts(ins QueueInspector, shards int) ([]QueueCounts, error) {
	existing, err := ins.Queues()
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	cfg := queue.Config{Shards: shards}
	out := make([]QueueCounts, 0, len(queue.Kinds))
	for _, kind := range queue.Kinds {
		qc := QueueCounts{Name: kind, Shards: max(shards, 1)}
		var latency time.Duration
		for _, q := range cfg.QueueNames(kind) {
			if !slices.Contains(existing, q) {
				continue
			}
			info, err := ins.GetQueueInfo(q)
			if err != nil {
				return nil, fmt.Errorf("queue %s: %w", q, err)
			}
			qc.Pending += info.Pending
			qc.Active += info.Active
			qc.Scheduled += info.Scheduled
			qc.Retry += info.Retry
			qc.Archived += info.Archived
			latency = max(latency, info.Latency)
		}
		qc.LatencySeconds = latency.Seconds()
		out = append(out, qc)
	}
	return out, nil
}

// readQueueCountsCtx is ReadQueueCounts bounded by ctx: asynq's inspector
// takes no context, so the read runs aside and is abandoned at the deadline.
func readQueueCountsCtx(ctx context.Context, ins QueueInspector, shards int) ([]QueueCounts, error) {
	type answer struct {
		counts []QueueCounts
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		c, err := ReadQueueCounts(ins, shards)
		done <- answer{c, err}
	}()
	select {
	case a := <-done:
		return a.counts, a.err
	case <-ctx.Done():
		return nil, fmt.Errorf("read queues: %w", ctx.Err())
	}
}

// listQueues answers GET /v1/queues: aggregate counts only, for any key.
func (s *Server) listQueues(c *gin.Context) error {
	if s.QueueInspector == nil {
		return &apiError{Status: http.StatusNotFound, Code: "not_found", Message: "queue counts are not available on this api"}
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), 5*time.Second)
	defer cancel()
	counts, err := readQueueCountsCtx(ctx, s.QueueInspector, s.QueueShards)
	if err != nil {
		return fmt.Errorf("queue counts: %w", err)
	}
	c.JSON(http.StatusOK, queueList{Queues: counts})
	return nil
}

// isAdmin reports whether secret is the admin token (SNAPQ_ADMIN_TOKEN);
// never true when no token is set.
func (s *Server) isAdmin(secret string) bool {
	t := s.Config.AdminToken
	return t != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(t)) == 1
}

// adminRequired is the 403 of an API key on the admin queue UI.
func adminRequired() error {
	return &apiError{Status: http.StatusForbidden, Code: "admin_required",
		Message: "the queue UI lists every tenant's tasks: sign in with the admin token (SNAPQ_ADMIN_TOKEN); any API key can read the counts at GET /v1/queues"}
}
