package queue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"

	"github.com/snapq/snapq/internal/testenv"
	"github.com/snapq/snapq/jobs"
)

func TestQueueNamesAndWeights(t *testing.T) {
	t.Parallel()
	one := Config{}
	if diff := cmp.Diff(map[string]int{"capture": 6, "regression": 3, "webhooks": 1, "reports": 6}, one.WorkerQueues()); diff != "" {
		t.Errorf("one shard keeps the plain queues (-want +got):\n%s", diff)
	}
	four := Config{Shards: 4}
	if diff := cmp.Diff([]string{"capture-00", "capture-01", "capture-02", "capture-03", "capture"}, four.QueueNames(QueueCapture)); diff != "" {
		t.Errorf("QueueNames (-want +got):\n%s", diff)
	}
	w := four.WorkerQueues()
	sum := map[string]int{}
	for q, n := range w {
		sum[KindOf(q)] += n
	}
	// 4 shards + the plain queue, each at the kind's weight: the kinds keep their 6:3:1:6 shares.
	if diff := cmp.Diff(map[string]int{"capture": 30, "regression": 15, "webhooks": 5, "reports": 30}, sum); diff != "" {
		t.Errorf("weights by kind (-want +got):\n%s", diff)
	}
	for _, tc := range []struct{ queue, kind string }{
		{"capture", "capture"}, {"capture-07", "capture"}, {"webhooks-12", "webhooks"}, {"capture-x", ""}, {"default", ""},
	} {
		if got := KindOf(tc.queue); got != tc.kind {
			t.Errorf("KindOf(%q) = %q, want %q", tc.queue, got, tc.kind)
		}
	}
}

// A batch's jobs spread over every shard, and each job always goes to the same one.
func TestQueueForSpreads(t *testing.T) {
	t.Parallel()
	c := Config{Shards: 8}
	seen := map[string]int{}
	for range 400 {
		id := jobs.NewID()
		q := c.QueueFor(QueueCapture, id)
		if again := c.QueueFor(QueueCapture, id); again != q {
			t.Fatalf("job %s routed to %s then %s", id, q, again)
		}
		seen[q]++
	}
	if len(seen) != 8 {
		t.Fatalf("400 jobs reached %d of 8 shards: %v", len(seen), seen)
	}
	for q, n := range seen {
		if n < 20 { // 50 expected
			t.Errorf("shard %s got %d of 400 jobs", q, n)
		}
	}
}

// With shards, a task is enqueued into its shard and found there again by
// TaskState and Delete; a task left in the plain queue (enqueued before
// sharding) is found too.
func TestShardedTaskState(t *testing.T) {
	t.Parallel()
	rs := testenv.StartRedisServer(t)
	conn := asynq.RedisClientOpt{Addr: rs.Addr}
	q := NewAsynqQueue(conn, Config{Shards: 4})
	defer q.Close()
	plain := NewAsynqQueue(conn, Config{})
	defer plain.Close()
	ctx := context.Background()
	ins := asynq.NewInspector(conn)
	defer ins.Close()

	// Five jobs for each shard: IDs are drawn until every shard holds five, so
	// no shard's queue is left unborn (20 random IDs miss one of 4 shards ~1 % of runs).
	var ids []string
	perShard := map[string]int{}
	for len(ids) < 20 {
		id := jobs.NewID()
		shard := q.cfg.QueueFor(QueueCapture, id)
		if perShard[shard] == 5 {
			continue
		}
		perShard[shard]++
		ids = append(ids, id)
		if err := q.Enqueue(ctx, jobs.CapturePayload{JobID: id, TimeoutMS: 60000}); err != nil {
			t.Fatal(err)
		}
	}
	old := jobs.NewID()
	if err := plain.Enqueue(ctx, jobs.CapturePayload{JobID: old, TimeoutMS: 60000}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		info, err := ins.GetQueueInfo(fmt.Sprintf("capture-%02d", i))
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		if info.Pending != 5 {
			t.Errorf("shard %d holds %d pending tasks, want 5", i, info.Pending)
		}
	}
	for _, id := range append(ids, old) {
		if st, _, err := q.TaskState(ctx, id); err != nil || st != "pending" {
			t.Errorf("TaskState(%s) = %q, %v; want pending", id, st, err)
		}
	}
	for _, id := range []string{ids[0], old} {
		if err := q.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
		if st, _, err := q.TaskState(ctx, id); err != nil || st != "" {
			t.Errorf("after Delete, TaskState(%s) = %q, %v; want gone", id, st, err)
		}
	}
}

// On a Redis Cluster the sharded queues work end to end: tasks enqueued into
// 8 shards spread over the nodes, TaskState finds each, and an asynq server
// serving WorkerQueues runs every one.
func TestShardedOnCluster(t *testing.T) {
	cl := testenv.StartCluster(t)
	conn := asynq.RedisClusterClientOpt{Addrs: cl.Addrs()}
	if err := CheckRedis(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
	if err := CheckRedis(context.Background(), asynq.RedisClientOpt{Addr: cl.Addrs()[0]}); err == nil {
		t.Error("CheckRedis took a cluster node for a single Redis")
	}
	cfg := Config{Shards: 8}
	q := NewAsynqQueue(conn, cfg)
	defer q.Close()
	ctx := context.Background()
	ids := map[string]bool{}
	for range 40 {
		id := jobs.NewID()
		ids[id] = true
		if err := q.Enqueue(ctx, jobs.CapturePayload{JobID: id, TimeoutMS: 60000}); err != nil {
			t.Fatal(err)
		}
		if st, _, err := q.TaskState(ctx, id); err != nil || st != "pending" {
			t.Fatalf("TaskState(%s) = %q, %v", id, st, err)
		}
	}
	ins := asynq.NewInspector(conn)
	defer ins.Close()
	nodes := map[string]bool{}
	for _, name := range cfg.QueueNames(QueueCapture)[:8] {
		ns, err := ins.ClusterNodes(name)
		if err != nil {
			t.Fatal(err)
		}
		nodes[ns[0].Addr] = true
	}
	if len(nodes) < 2 {
		t.Errorf("8 shards on %d node(s)", len(nodes))
	}

	ran := make(chan string, len(ids))
	srv := asynq.NewServer(conn, asynq.Config{Concurrency: 4, Queues: cfg.WorkerQueues(), LogLevel: asynq.ErrorLevel})
	mux := asynq.NewServeMux()
	Register(mux, func(_ context.Context, p jobs.CapturePayload) error { ran <- p.JobID; return nil })
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	deadline := time.After(60 * time.Second)
	for range len(ids) {
		select {
		case id := <-ran:
			delete(ids, id)
		case <-deadline:
			t.Fatalf("%d tasks never ran", len(ids))
		}
	}
	if len(ids) != 0 {
		t.Fatalf("tasks not run: %v", ids)
	}
}
