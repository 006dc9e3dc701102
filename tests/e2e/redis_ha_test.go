package e2e

// Redis high availability (issue 13, item 2): snapq on a Sentinel group
// (SNAPQ_REDIS_URL=redis-sentinel://…). A failover in the middle of a batch,
// asked for or forced by killing the master, costs no job: every accepted job
// succeeds. The group is the test's own (testenv.StartSentinelGroup), on
// loopback ports, stopped in cleanup.

import (
	"context"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/snapq/snapq/internal/testenv"
)

// tinyBatch is n short fixture pages captured as text only: cheap pages, so a
// batch of hundreds stays quick while it exercises the queue.
func tinyBatch(site string, n int) map[string]any {
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("%s/short?i=%d", site, i)
	}
	return map[string]any{"urls": urls, "options": map[string]any{
		"outputs": []string{"text"}, "viewport": map[string]any{"width": 320, "height": 240}}}
}

// submitWith posts a batch with headers and returns its id.
func (s *stack) submitWith(headers map[string]string, body map[string]any) string {
	s.t.Helper()
	var b batchResp
	if code, _ := s.doWith("POST", "/v1/batches", headers, body, &b); code != http.StatusAccepted {
		s.t.Fatalf("submit: %d", code)
	}
	return b.ID
}

// waitCounts polls the batch (tolerating a failed poll) until cond holds.
func (s *stack) waitCounts(id string, headers map[string]string, timeout time.Duration, what string, cond func(batchResp) bool) batchResp {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var b batchResp
		code, _ := s.doWith("GET", "/v1/batches/"+id, headers, nil, &b)
		if code == http.StatusOK && cond(b) {
			return b
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("batch %s: %s not reached after %s: %s %v", id, what, timeout, b.Status, b.Counts)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func midBatch(b batchResp) bool  { return b.Counts["succeeded"] >= 20 && b.Status != "completed" }
func completed(b batchResp) bool { return b.Status == "completed" }

// sentinelFailover runs a 50-page batch (100 with SNAPQ_PROOF_SCALE=full) on
// a Sentinel group and fails the master over in its middle with fail; every
// job must succeed.
func sentinelFailover(t *testing.T, fail func(ctx context.Context, g *testenv.SentinelGroup) (string, error)) {
	start := time.Now()
	g := testenv.StartSentinelGroup(t)
	s := startStack(t, "SNAPQ_REDIS_URL="+g.URL(), "SNAPQ_RECONCILE_INTERVAL=2s", "SNAPQ_RECONCILE_GRACE=3s")
	site := fixtureSite(t)
	n := proofScale(t, 50, 100)
	id := s.submitWith(nil, tinyBatch(site, n))
	mid := s.waitCounts(id, nil, 90*time.Second, "20 succeeded", midBatch)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	old := g.Master.Addr
	failedAt := time.Now()
	newMaster, err := fail(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("master %s → %s in %s, with counts %v", old, newMaster, time.Since(failedAt).Round(time.Millisecond), mid.Counts)

	done := s.waitCounts(id, nil, 3*time.Minute, "completed", completed)
	if done.Counts["succeeded"] != n || done.Total != n {
		t.Fatalf("after the failover: %v of %d, want %d succeeded", done.Counts, done.Total, n)
	}
	// The api reports the queue from the new master.
	var qs struct {
		Queues []struct {
			Name    string `json:"name"`
			Pending int    `json:"pending"`
		} `json:"queues"`
	}
	if code := s.do("GET", "/v1/queues", nil, &qs); code != http.StatusOK || len(qs.Queues) != 4 {
		t.Fatalf("GET /v1/queues after the failover: %d %+v", code, qs)
	}
	t.Logf("%d/%d succeeded %s after the failover; test %s", n, n, time.Since(failedAt).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// SENTINEL FAILOVER mid-batch: the old master becomes a replica.
func TestRedisSentinelFailover(t *testing.T) {
	t.Parallel()
	sentinelFailover(t, func(ctx context.Context, g *testenv.SentinelGroup) (string, error) {
		return g.Failover(ctx)
	})
}

// kill -9 of the master mid-batch: the sentinels promote the replica; what
// the replica had not received yet is lost, and the reconciler re-enqueues it.
func TestRedisSentinelMasterKilled(t *testing.T) {
	t.Parallel()
	sentinelFailover(t, func(ctx context.Context, g *testenv.SentinelGroup) (string, error) {
		old := g.Master.Addr
		g.Master.Stop(syscall.SIGKILL)
		return g.WaitNewMaster(ctx, old)
	})
}
