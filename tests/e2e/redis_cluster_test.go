package e2e

// Redis Cluster (issue 13, item 3): snapq on a three-master cluster
// (SNAPQ_REDIS_URL=redis-cluster://…) shards each queue kind over
// SNAPQ_QUEUE_SHARDS queues (8 by default on a cluster), which the cluster
// spreads over its nodes. An 80-page batch (200 with SNAPQ_PROOF_SCALE=full) succeeds, the API's queue counts
// and metrics sum the shards, and the rate limits (Lua scripts on
// hash-tagged keys) still answer 429.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/snapq/snapq/internal/testenv"
)

type queuesResp struct {
	Queues []struct {
		Name    string `json:"name"`
		Shards  int    `json:"shards"`
		Pending int    `json:"pending"`
		Active  int    `json:"active"`
		Retry   int    `json:"retry"`
	} `json:"queues"`
}

func TestRedisCluster(t *testing.T) {
	t.Parallel()
	start := time.Now()
	cl := testenv.StartCluster(t)
	s := startStack(t, "SNAPQ_REDIS_URL="+cl.URL(), "SNAPQ_AUTH=on", "SNAPQ_RATE_LIMIT=20", "SNAPQ_RATE_BURST=40",
		"SNAPQ_ADMIN_TOKEN=cluster-test-admin-token-0123456789",
		// The whole batch in Redis at once (fair dispatch would hold all but
		// the depth in Postgres), so the shards' counts add up to it.
		"SNAPQ_DISPATCH_DEPTH=1000")
	keyA, keyB := s.apiKey("alice"), s.apiKey("bob")
	auth := func(k string) map[string]string { return map[string]string{"Authorization": "Bearer " + k} }
	site := fixtureSite(t)

	// Queue first, work later: the worker is stopped while the batch is
	// enqueued, so the counts are exact.
	s.stop("worker", syscall.SIGTERM)
	n := proofScale(t, 80, 200)
	id := s.submitWith(auth(keyA), tinyBatch(site, n))

	// The dispatcher enqueues the batch just after the submission returns.
	var qs queuesResp
	for deadline := time.Now().Add(30 * time.Second); ; {
		if code, _ := s.doWith("GET", "/v1/queues", auth(keyB), nil, &qs); code != http.StatusOK {
			t.Fatalf("GET /v1/queues: %d", code)
		}
		if len(qs.Queues) > 0 && qs.Queues[0].Pending >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(qs.Queues) != 4 || qs.Queues[0].Name != "capture" || qs.Queues[0].Shards != 8 || qs.Queues[0].Pending != n {
		t.Fatalf("GET /v1/queues = %+v, want capture with 8 shards and %d pending", qs.Queues, n)
	}
	// The dashboard's queue page shows the same sums.
	ui := openDashboard(t, s.api+"/#/queues")
	ui.wait("the key prompt", 20*time.Second, `() => document.querySelector('#key-dialog').open`)
	ui.setValue("#key-input", keyB)
	ui.click("#key-save")
	ui.wait(fmt.Sprintf("%d pending captures", n), 20*time.Second,
		`(n) => document.querySelector('#queue-rows tr[data-queue="capture"] td[data-state="pending"]')?.textContent === String(n)`, n)
	ui.shot("dashboard-queues-cluster")
	metrics := scrapeWith(t, s.api+"/metrics", keyB)
	if !hasLine(metrics, fmt.Sprintf(`snapq_queue_tasks{queue="capture",state="pending"} %d`, n)) {
		t.Errorf("metrics do not sum the shards: %s", grepLines(metrics, "snapq_queue_tasks"))
	}

	// The tasks are spread: every shard holds some, and the shards live on
	// more than one node.
	ins := asynq.NewInspector(asynq.RedisClusterClientOpt{Addrs: cl.Addrs()})
	defer ins.Close()
	nodes := map[string]bool{}
	for i := range 8 {
		q := fmt.Sprintf("capture-%02d", i)
		info, err := ins.GetQueueInfo(q)
		if err != nil || info.Pending == 0 {
			t.Fatalf("shard %s: %+v %v, want pending tasks", q, info, err)
		}
		ns, err := ins.ClusterNodes(q)
		if err != nil || len(ns) == 0 {
			t.Fatalf("cluster nodes of %s: %v", q, err)
		}
		nodes[ns[0].Addr] = true
	}
	if len(nodes) < 2 {
		t.Errorf("the 8 shards live on %d node(s), want them spread over the cluster", len(nodes))
	}

	// The queue UI lists tasks: not for an API key, for the admin token.
	if code, _ := s.doWith("GET", "/admin/queues/api/queues", auth(keyA), nil, nil); code != http.StatusForbidden {
		t.Errorf("queue UI with an API key: %d, want 403", code)
	}
	var mon struct {
		Queues []struct {
			Queue string `json:"queue"`
		} `json:"queues"`
	}
	if code, _ := s.doWith("GET", "/admin/queues/api/queues", auth("cluster-test-admin-token-0123456789"), nil, &mon); code != http.StatusOK || len(mon.Queues) < 8 {
		t.Errorf("queue UI with the admin token on the cluster: %d, %d queues", code, len(mon.Queues))
	}

	workStart := time.Now()
	s.start("worker")
	done := s.waitCounts(id, auth(keyA), 4*time.Minute, "completed", completed) // minutes only on a machine under heavy load
	if done.Counts["succeeded"] != n {
		t.Fatalf("cluster batch: %v, want %d succeeded", done.Counts, n)
	}
	t.Logf("%d pages on the cluster in %s", n, time.Since(workStart).Round(time.Millisecond))

	// The request limit (GCRA script, hash-tagged key) holds on the cluster.
	// Requests one after another until the first 429: at 20/s past a burst of 40, one
	// comes within 400 requests however slowly a loaded machine sends them (they
	// refill the bucket while they go; 60 in a row were once all allowed under load).
	limited, sent := 0, 0
	for ; sent < 400 && limited == 0; sent++ {
		code, h := s.doWith("GET", "/v1/batches/"+id, auth(keyB), nil, nil)
		if code == http.StatusTooManyRequests {
			limited++
			if h.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
		}
	}
	if limited == 0 {
		t.Errorf("%d requests past a burst of 40 at 20/s were all allowed", sent)
	}
	// So does the limit on failed authentications (10, then 429).
	bad := map[string]string{"Authorization": "Bearer sq_" + strings.Repeat("x", 43)}
	codes := map[int]int{}
	for range 12 {
		code, _ := s.doWith("GET", "/v1/batches", bad, nil, nil)
		codes[code]++
	}
	if codes[http.StatusTooManyRequests] == 0 || codes[http.StatusUnauthorized] != 10 {
		t.Errorf("12 bad keys: %v, want 10×401 then 429", codes)
	}
	t.Logf("test %s", time.Since(start).Round(time.Millisecond))
}

// scrapeWith fetches /metrics with an API key.
func scrapeWith(t *testing.T, url, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	return string(body)
}
