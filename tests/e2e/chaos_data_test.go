package e2e

// Chaos tests of snapq's data services (issue 12, items 1 and 2): Redis
// restarted or emptied, Postgres restarted or down while results are
// committed, each in the middle of a batch. A test that breaks a service runs
// its own instance of it (testenv.StartRedisServer, testenv.StartPostgres) on
// a loopback port of its own; the shared services are never touched.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/minio/minio-go/v7"

	"github.com/snapq/snapq/internal/testenv"
)

// chaosStack is a stack whose Redis, database and bucket the test knows, so
// it can break them and audit them afterwards.
type chaosStack struct {
	*stack
	dbURL  string
	bucket string
	mc     *minio.Client
	tmp    string // the processes' TMPDIR: every Chromium the worker starts has its profile here
}

// startChaosStack starts the stack on redisURL and dbURL. startStack's own
// Redis database and schema are claimed but unused: SNAPQ_REDIS_URL,
// SNAPQ_DATABASE_URL and SNAPQ_S3_BUCKET given here come later in the
// processes' environment, and os/exec keeps the last value of a key.
func startChaosStack(t *testing.T, redisURL, dbURL string, extraEnv ...string) *chaosStack {
	t.Helper()
	mc, err := testenv.LocalS3().Client(context.Background())
	if err != nil {
		testenv.Unavailable(t, "minio", err)
	}
	c := &chaosStack{dbURL: dbURL, bucket: "snapq-chaos-" + testenv.RandomSuffix(4), mc: mc, tmp: t.TempDir()}
	t.Cleanup(func() { testenv.RemoveBucket(mc, c.bucket) })
	// Chromium runs as its own user (the sandbox): like /tmp, the TMPDIR its
	// profile and singleton socket go in must be open to it (t.TempDir's are
	// root's alone).
	if err := errors.Join(os.Chmod(filepath.Dir(c.tmp), 0o755), os.Chmod(c.tmp, 0o1777)); err != nil {
		t.Fatal(err)
	}
	env := append([]string{
		"SNAPQ_REDIS_URL=" + redisURL,
		"SNAPQ_DATABASE_URL=" + dbURL,
		"SNAPQ_S3_BUCKET=" + c.bucket,
		"TMPDIR=" + c.tmp,
		"SNAPQ_RECONCILE_INTERVAL=2s",
		"SNAPQ_RECONCILE_GRACE=3s",
	}, append(perAttemptKeys, extraEnv...)...)
	c.stack = startStack(t, env...)
	return c
}

// chaosTargets is the batch every chaos test runs: slow pages keep captures
// in flight when the fault hits, tall ones give jobs several artifacts.
func chaosTargets(site string) []map[string]any {
	var targets []map[string]any
	for i := range 12 {
		targets = append(targets, map[string]any{"url": fmt.Sprintf("%s/slow?ms=1200&i=%d", site, i)})
	}
	for i := range 4 {
		targets = append(targets, map[string]any{"url": fmt.Sprintf("%s/tall?h=%d", site, 1800+i*400)})
	}
	return targets
}

func (c *chaosStack) submit(targets []map[string]any) string {
	c.t.Helper()
	var b batchResp
	if code := c.do("POST", "/v1/batches", map[string]any{"targets": targets}, &b); code != http.StatusAccepted {
		c.t.Fatalf("submit: %d", code)
	}
	return b.ID
}

// batch reads the batch without failing the test when the api cannot answer
// (a 5xx or no connection while its database is down); ok says it answered.
func (c *chaosStack) batch(id string) (batchResp, bool) {
	var b batchResp
	resp, err := http.Get(c.api + "/v1/batches/" + id)
	if err != nil {
		return b, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&b) != nil {
		return b, false
	}
	return b, true
}

// waitDone waits for the batch to complete, tolerating the api's errors while
// a service it needs is down; it returns how many polls went unanswered.
func (c *chaosStack) waitDone(id string, timeout time.Duration) (batchResp, int) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	unanswered := 0
	for {
		b, ok := c.batch(id)
		if !ok {
			unanswered++
		}
		if ok && b.Status == "completed" {
			return b, unanswered
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("batch %s not completed after %s: %s %v (%d polls unanswered)", id, timeout, b.Status, b.Counts, unanswered)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitMidBatch waits until at least done jobs succeeded and some job is
// running: the fault then hits a batch with work behind and ahead of it.
func (c *chaosStack) waitMidBatch(id string, done int) batchResp {
	c.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		b, _ := c.batch(id)
		if b.Counts["succeeded"] >= done && b.Counts["running"] > 0 {
			// The leak check at the end looks for Chromium by its profile
			// directory; make sure it finds the live one.
			if len(testenv.ProcessesWithArg(c.tmp)) == 0 {
				c.t.Fatalf("jobs are running but no process has %s in its command line; the Chromium leak check would see nothing", c.tmp)
			}
			return b
		}
		if b.Status == "completed" || time.Now().After(deadline) {
			c.t.Fatalf("batch never reached %d succeeded with jobs running: %s %v", done, b.Status, b.Counts)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// chaosOutcome is what a finished batch looks like to the user and in the stores.
type chaosOutcome struct {
	attempts  int // sum over jobs
	retried   int // jobs with more than one attempt
	artifacts int
	// maxAttempts is the most attempts one job took.
	maxAttempts int
}

// audit checks the batch after the fault: every job succeeded, each with
// exactly one set of artifacts whose rows match the bucket's objects one to
// one (no duplicates, no orphans, no missing bytes).
func (c *chaosStack) audit(id string, total int) chaosOutcome {
	t := c.t
	t.Helper()
	var list struct {
		Jobs []jobResp `json:"jobs"`
	}
	c.do("GET", "/v1/batches/"+id+"/jobs?limit=100", nil, &list)
	if len(list.Jobs) != total {
		t.Fatalf("batch lists %d jobs, want %d", len(list.Jobs), total)
	}
	var out chaosOutcome
	for _, j := range list.Jobs {
		out.attempts += j.Attempts
		out.maxAttempts = max(out.maxAttempts, j.Attempts)
		if j.Attempts > 1 {
			out.retried++
		}
		if j.Status != "succeeded" {
			t.Errorf("job %s (%s): status %s after %d attempts, error %+v; want succeeded", j.ID, j.URL, j.Status, j.Attempts, j.Error)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// One artifact set per job: screenshots numbered 1..n once each, and a
	// succeeded job never without its rows.
	rows, err := conn.Query(ctx, `SELECT j.id, j.status, count(a.id), count(DISTINCT a.name),
		coalesce(min(a.seq), 0), coalesce(max(a.seq), 0)
		FROM jobs j LEFT JOIN artifacts a ON a.job_id = j.id WHERE j.batch_id = $1 GROUP BY j.id, j.status`, id)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var job, status string
		var n, names, lo, hi int
		if err := rows.Scan(&job, &status, &n, &names, &lo, &hi); err != nil {
			t.Fatal(err)
		}
		out.artifacts += n
		switch {
		case status == "succeeded" && n == 0:
			t.Errorf("job %s is succeeded without artifact rows", job)
		case n != names || (n > 0 && (lo != 1 || hi != n)):
			t.Errorf("job %s has %d artifact rows, %d names, seq %d..%d; want one set numbered 1..n", job, n, names, lo, hi)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	keyRows, err := conn.Query(ctx, `SELECT a.object_key FROM artifacts a JOIN jobs j ON j.id = a.job_id WHERE j.batch_id = $1`, id)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := pgx.CollectRows(keyRows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	inDB := map[string]bool{}
	for _, k := range keys {
		if inDB[k] {
			t.Errorf("object %s is referenced by two artifact rows", k)
		}
		inDB[k] = true
	}
	var orphans, missing []string
	inBucket := map[string]bool{}
	for obj := range c.mc.ListObjects(ctx, c.bucket, minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		inBucket[obj.Key] = true
		if !inDB[obj.Key] {
			orphans = append(orphans, obj.Key)
		}
	}
	for k := range inDB {
		if !inBucket[k] {
			missing = append(missing, k)
		}
	}
	sort.Strings(orphans)
	sort.Strings(missing)
	if len(orphans) > 0 || len(missing) > 0 {
		t.Errorf("bucket holds %d objects, database %d artifact rows; orphans %v, rows without object %v",
			len(inBucket), len(inDB), orphans, missing)
	}
	return out
}

// stopAndCheckChromium stops api and worker, then checks that no Chromium the
// worker started outlives it.
func (c *chaosStack) stopAndCheckChromium() {
	c.t.Helper()
	if c.procs.Pid("worker") == 0 {
		c.t.Fatal("worker is not running at the end of the batch")
	}
	c.procs.StopAll()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := testenv.ProcessesWithArg(c.tmp)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			c.t.Errorf("%d Chromium processes with a profile in %s outlived the worker: pids %v", len(left), c.tmp, left)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// reconciled reads the api's "reconciled" log lines: how many jobs (and
// outbox rows) its reconciler acted on, in all and per pass that acted.
func (c *chaosStack) reconciled() (n int, passes []int) {
	for _, line := range strings.Split(c.procs.Log("api", 1<<30), "\n") {
		var rec struct {
			Msg   string `json:"msg"`
			Count int    `json:"count"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "reconciled" {
			n += rec.Count
			passes = append(passes, rec.Count)
		}
	}
	return n, passes
}

// Redis is restarted twice in one batch on its port and AOF: first cleanly
// (SIGTERM), then as a crash (SIGKILL). The worker and api reconnect, every
// job succeeds once with one artifact set.
func TestChaosRedisRestart(t *testing.T) {
	t.Parallel()
	rs := testenv.StartRedisServer(t)
	c := startChaosStack(t, rs.URL(), testenv.DatabaseURL(t))
	targets := chaosTargets(fixtureSite(t))
	id := c.submit(targets)
	start := time.Now()

	for i, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		mid := c.waitMidBatch(id, 3+5*i)
		rs.Stop(sig)
		time.Sleep(2 * time.Second) // down while captures run and finish
		if err := rs.Start(); err != nil {
			t.Fatal(err)
		}
		t.Logf("redis %v and restarted at %s: counts before %v", sig, time.Since(start).Round(time.Millisecond), mid.Counts)
	}
	restarted := time.Now()
	done, unanswered := c.waitDone(id, 2*time.Minute)
	out := c.audit(id, len(targets))
	c.stopAndCheckChromium()
	// The AOF kept every task across both restarts: nothing was left for the
	// reconciler to re-enqueue, and no job ran twice.
	if n, passes := c.reconciled(); n != 0 {
		t.Errorf("the reconciler acted on %d jobs (passes %v) after Redis restarts with the AOF on; want 0: tasks were lost", n, passes)
	}
	if out.attempts != len(targets) {
		t.Errorf("%d attempts for %d jobs; a Redis restart must not cost a job a retry", out.attempts, len(targets))
	}
	t.Logf("%d jobs succeeded %d of %d; %d attempts, %d artifacts; batch done %s after the last restart; %d polls unanswered",
		len(targets), done.Counts["succeeded"], len(targets), out.attempts, out.artifacts,
		time.Since(restarted).Round(time.Millisecond), unanswered)
}

// Redis loses everything (FLUSHALL) mid-batch: the queued tasks and those of
// running jobs are gone. The reconciler re-enqueues the queued jobs; the
// running ones finish in their worker; all succeed once.
func TestChaosRedisDataLoss(t *testing.T) {
	t.Parallel()
	rs := testenv.StartRedisServer(t)
	c := startChaosStack(t, rs.URL(), testenv.DatabaseURL(t))
	targets := chaosTargets(fixtureSite(t))
	id := c.submit(targets)

	mid := c.waitMidBatch(id, 3)
	rdb := rs.Client()
	defer rdb.Close()
	if err := rdb.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	flushed := time.Now()
	t.Logf("FLUSHALL with counts %v", mid.Counts)
	done, unanswered := c.waitDone(id, 2*time.Minute)
	out := c.audit(id, len(targets))
	c.stopAndCheckChromium()
	// Every job still queued at the flush had lost its task; only the reconciler could bring it back.
	// The lost tasks came back through the reconciler, each once: a job whose
	// new task is pending is not acted on again (the reconciler must still
	// see tasks after the loss). mid was read just before the flush, so its
	// unfinished jobs bound those that lost a task.
	n, passes := c.reconciled()
	if unfinished := mid.Counts["queued"] + mid.Counts["running"]; n == 0 || n > unfinished {
		t.Errorf("the reconciler acted %d times (passes %v); %d jobs were unfinished before Redis lost its data: want each lost one re-enqueued once",
			n, passes, unfinished)
	}
	t.Logf("%d jobs: succeeded %d; %d attempts, %d jobs retried, %d artifacts; reconciler acted on %d (passes %v); batch done %s after the flush; %d polls unanswered",
		len(targets), done.Counts["succeeded"], out.attempts, out.retried, out.artifacts, n, passes,
		time.Since(flushed).Round(time.Millisecond), unanswered)
}

// Postgres restarts (fast shutdown: every connection is cut) mid-batch:
// captures in flight lose their connection at start or commit, retry, and
// every job succeeds with its artifact rows.
func TestChaosPostgresRestart(t *testing.T) {
	t.Parallel()
	pg := testenv.StartPostgres(t)
	// Retries back off from 2 s (14 s over 3 retries), longer than the restart.
	c := startChaosStack(t, testenv.Redis(t).URL(), pg.URL(), "SNAPQ_RETRY_BASE_DELAY=2s")
	targets := chaosTargets(fixtureSite(t))
	id := c.submit(targets)

	mid := c.waitMidBatch(id, 3)
	begin := time.Now()
	if err := pg.Restart("fast"); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	t.Logf("postgres restarted in %s; counts before %v", restarted.Sub(begin).Round(time.Millisecond), mid.Counts)
	done, unanswered := c.waitDone(id, 2*time.Minute)
	out := c.audit(id, len(targets))
	c.stopAndCheckChromium()
	t.Logf("%d jobs: succeeded %d; %d attempts, %d jobs retried, %d artifacts; batch done %s after the restart; %d polls unanswered",
		len(targets), done.Counts["succeeded"], out.attempts, out.retried, out.artifacts, time.Since(restarted).Round(time.Millisecond), unanswered)
}

// Postgres is down for a few seconds while captures finish: their commits
// fail, the jobs are retried, and none is marked done without its rows. The
// outage (4 s) is shorter than the capture retry budget (3 retries backing
// off from 2 s: 14 s).
func TestChaosPostgresDownAtCommit(t *testing.T) {
	t.Parallel()
	c, _, out := postgresDownAtCommit(t, 2*time.Second, 4*time.Second)
	// A started job runs again only when its attempt ended without a commit.
	if out.retried == 0 {
		t.Errorf("no job needed a second attempt; no capture was committing while Postgres was down, so the test proves nothing")
	}
	c.stopAndCheckChromium()
}

// Postgres is down for 12 s, far longer than the retry budget (3 retries
// backing off from 500 ms: 3.5 s, and asynq forwards retries every 5 s):
// tasks dequeued meanwhile cannot start their job, and that must not use up
// their retries. Every job waits for the database and succeeds; no job needs
// more than the one extra attempt an interrupted commit costs. (Before, 10 of
// 16 jobs ended failed with worker_lost after 0 attempts.)
func TestChaosPostgresOutageOutlastsRetries(t *testing.T) {
	t.Parallel()
	c, mid, out := postgresDownAtCommit(t, 500*time.Millisecond, 12*time.Second)
	total := len(chaosTargets(""))
	// A task meets the outage reading its job (the host cap's look at its URL)
	// or starting it.
	waited := c.logCount("worker", `"task waits for the job store"`)
	if waited == 0 {
		t.Errorf("no task found the job store down when starting its job; the outage hit no queued job, so the test proves nothing (counts at the stop %v)", mid.Counts)
	}
	if out.maxAttempts > 2 {
		t.Errorf("a job took %d attempts; an outage may cost a job at most the one attempt whose commit it cut", out.maxAttempts)
	}
	// Only the jobs in a worker's hands when Postgres went down can need a
	// second attempt: those running, and one more per worker slot.
	if limit := total + mid.Counts["running"] + 4; out.attempts > limit {
		t.Errorf("%d attempts for %d jobs (%d running at the stop); want at most %d", out.attempts, total, mid.Counts["running"], limit)
	}
	t.Logf("%d task tries found the job store down when starting their job", waited)
	c.stopAndCheckChromium()
}

// postgresDownAtCommit stops the test's Postgres for outage mid-batch, with
// capture retries backing off from retryBase, and audits the batch.
func postgresDownAtCommit(t *testing.T, retryBase, outage time.Duration) (*chaosStack, batchResp, chaosOutcome) {
	pg := testenv.StartPostgres(t)
	c := startChaosStack(t, testenv.Redis(t).URL(), pg.URL(), "SNAPQ_RETRY_BASE_DELAY="+retryBase.String())
	targets := chaosTargets(fixtureSite(t))
	id := c.submit(targets)

	mid := c.waitMidBatch(id, 3)
	if err := pg.Stop("fast"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(outage) // captures in flight finish and try to commit
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	t.Logf("postgres down %s; counts before %v", outage, mid.Counts)
	done, unanswered := c.waitDone(id, 2*time.Minute)
	out := c.audit(id, len(targets))
	t.Logf("%d jobs: succeeded %d; %d attempts, %d jobs retried, %d artifacts; batch done %s after Postgres came back; %d polls unanswered",
		len(targets), done.Counts["succeeded"], out.attempts, out.retried, out.artifacts, time.Since(up).Round(time.Millisecond), unanswered)
	return c, mid, out
}
