package queue

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// Sharding. An asynq queue keeps all of its keys under one hash tag
// (asynq:{capture}:…), so on a Redis Cluster one queue lives in one hash slot
// on one node: every enqueue, dequeue and completion of that kind would hit
// that node. With Config.Shards = N > 1 each kind is split into N queues,
// capture-00 … capture-NN, which the cluster spreads over its nodes.
//
// A task's shard is a stable hash of its payload's id (the job id for a
// capture and its comparison, the delivery id for a webhook, the suite id for
// a scheduled run), so the queue can find the task again by id alone
// (TaskState, Delete) and one large batch spreads over every shard rather than
// sitting on one node. With one shard (the default on a single Redis) the
// queues keep their plain names, as before sharding.
//
// Workers serve every shard of a kind with that kind's weight, so the shares
// between kinds (Weights) stay as they are, and also the plain queue of each
// kind: tasks enqueued before sharding was turned on, or by a process with
// another setting, are still run.

// MaxShards bounds SNAPQ_QUEUE_SHARDS: each shard is a queue every worker
// polls.
const MaxShards = 64

// DefaultShards is the shard count when SNAPQ_QUEUE_SHARDS is unset: 8 on a
// Redis Cluster, 1 (no sharding) otherwise.
func DefaultShards(cluster bool) int {
	if cluster {
		return 8
	}
	return 1
}

// ValidateShards checks a shard count.
func ValidateShards(n int) error {
	if n < 1 || n > MaxShards {
		return fmt.Errorf("SNAPQ_QUEUE_SHARDS=%d: want 1 to %d", n, MaxShards)
	}
	return nil
}

// Kinds are the queue kinds, each split into shards.
var Kinds = []string{QueueCapture, QueueRegression, QueueWebhooks, QueueReports}

// shards returns the effective shard count (0 means 1).
func (c Config) shards() int { return max(c.Shards, 1) }

// ShardName is the queue of shard i of kind (the plain kind name with one shard).
func ShardName(kind string, i, shards int) string {
	if shards <= 1 {
		return kind
	}
	return fmt.Sprintf("%s-%02d", kind, i)
}

// QueueFor is the queue a task of kind with payload id goes to.
func (c Config) QueueFor(kind, id string) string {
	n := c.shards()
	if n == 1 {
		return kind
	}
	h := fnv.New32a()
	h.Write([]byte(id))
	return ShardName(kind, int(h.Sum32()%uint32(n)), n)
}

// QueueNames lists every queue of kind: its shards, then (when sharded) the
// plain name workers still drain.
func (c Config) QueueNames(kind string) []string {
	n := c.shards()
	if n == 1 {
		return []string{kind}
	}
	out := make([]string, 0, n+1)
	for i := range n {
		out = append(out, ShardName(kind, i, n))
	}
	return append(out, kind)
}

// WorkerQueues is the asynq server's queue priorities: every queue of every
// kind at its kind's weight.
func (c Config) WorkerQueues() map[string]int {
	out := map[string]int{}
	for _, kind := range Kinds {
		for _, q := range c.QueueNames(kind) {
			out[q] = Weights[kind]
		}
	}
	return out
}

// KindOf returns the kind a queue name belongs to ("capture-03" → "capture"),
// or "" for a queue that is not snapq's.
func KindOf(queue string) string {
	for _, kind := range Kinds {
		if queue == kind {
			return kind
		}
		if rest, ok := strings.CutPrefix(queue, kind+"-"); ok && len(rest) >= 2 && strings.Trim(rest, "0123456789") == "" {
			return kind
		}
	}
	return ""
}
