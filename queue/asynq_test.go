package queue

import (
	"context"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/snapq/snapq/internal/testenv"
	"github.com/snapq/snapq/jobs"
)

// After Redis lost its data, a task enqueued again by the same process is
// seen again: the client registers a queue only once per process, so
// taskState must put the queue back in asynq's registry itself.
func TestTaskStateAfterRedisDataLoss(t *testing.T) {
	t.Parallel()
	rs := testenv.StartRedisServer(t) // flushed below: never the shared Redis
	q := NewAsynqQueue(asynq.RedisClientOpt{Addr: rs.Addr}, Config{MaxRetry: 3})
	defer q.Close()
	ctx := context.Background()
	before, after := jobs.NewID(), jobs.NewID()
	if err := q.Enqueue(ctx, jobs.CapturePayload{JobID: before, TimeoutMS: 60000}); err != nil {
		t.Fatal(err)
	}
	rdb := rs.Client()
	defer rdb.Close()
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, jobs.CapturePayload{JobID: after, TimeoutMS: 60000}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, id, want string
	}{
		{"lost with the data", before, ""},
		{"enqueued after the loss", after, "pending"},
	} {
		got, _, err := q.TaskState(ctx, tc.id)
		if err != nil || got != tc.want {
			t.Errorf("%s: TaskState = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}
