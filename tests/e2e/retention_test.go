package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/minio/minio-go/v7"

	"github.com/snapq/snapq/internal/testenv"
)

const retentionAdminToken = "e2e-retention-admin-token-0123456789"

type sweepReport struct {
	DryRun    bool `json:"dry_run"`
	Retention struct {
		Batches   int   `json:"batches"`
		Runs      int   `json:"runs"`
		Protected int   `json:"protected"`
		Objects   int   `json:"objects"`
		Bytes     int64 `json:"bytes"`
		Deferred  int   `json:"deferred"`
		Expired   []struct {
			BatchID string `json:"batch_id"`
			Reason  string `json:"reason"`
		} `json:"expired"`
		Keys []string `json:"keys"`
	} `json:"retention"`
	Orphans struct {
		Deleted int      `json:"deleted"`
		Bytes   int64    `json:"bytes"`
		Keys    []string `json:"keys"`
	} `json:"orphans"`
	Missing struct {
		Checked int      `json:"checked"`
		Missing int      `json:"missing"`
		Keys    []string `json:"keys"`
	} `json:"missing"`
	Errors []string `json:"errors"`
}

// sweep runs POST /v1/admin/sweep with the admin token.
func (s *stack) sweep(dryRun bool) sweepReport {
	s.t.Helper()
	var rep sweepReport
	code, _ := s.doWith("POST", "/v1/admin/sweep", map[string]string{"Authorization": "Bearer " + retentionAdminToken},
		map[string]any{"dry_run": dryRun}, &rep)
	if code != http.StatusOK || len(rep.Errors) > 0 {
		s.t.Fatalf("sweep (dry run %v): status %d, errors %v", dryRun, code, rep.Errors)
	}
	return rep
}

// sortedBucketKeys lists every object key in the stack's bucket, sorted.
func (s *stack) sortedBucketKeys() []string {
	return slices.Sorted(maps.Keys(s.bucketKeys()))
}

// db runs fn on a connection to the stack's schema.
func (s *stack) db(fn func(ctx context.Context, conn *pgx.Conn)) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.env("SNAPQ_DATABASE_URL"))
	if err != nil {
		s.t.Fatal(err)
	}
	defer conn.Close(ctx)
	fn(ctx, conn)
}

// keysByBatch is the object keys each batch's artifact and thumbnail rows name.
func (s *stack) keysByBatch() map[string]map[string]bool {
	s.t.Helper()
	out := map[string]map[string]bool{}
	s.db(func(ctx context.Context, conn *pgx.Conn) {
		rows, err := conn.Query(ctx, `SELECT j.batch_id::text, a.object_key FROM artifacts a JOIN jobs j ON j.id = a.job_id
			UNION ALL SELECT j.batch_id::text, t.object_key FROM thumbnails t JOIN artifacts a ON a.id = t.artifact_id
				JOIN jobs j ON j.id = a.job_id`)
		if err != nil {
			s.t.Fatal(err)
		}
		var b, k string
		if _, err := pgx.ForEachRow(rows, []any{&b, &k}, func() error {
			if out[b] == nil {
				out[b] = map[string]bool{}
			}
			out[b][k] = true
			return nil
		}); err != nil {
			s.t.Fatal(err)
		}
	})
	return out
}

// Retention with a 1-day default and rows back-dated in Postgres: a pass
// deletes exactly the expired batches' rows and the objects no surviving row
// names, keeps the approved run whose images are baselines (and the content
// object an expired run shares with them), removes orphans planted in the
// bucket, reports a row whose object is gone, and a second pass deletes
// nothing; a dry run first changes nothing. Then two api replicas schedule
// the pass every 2 s and a worker runs it once per interval.
func TestRetentionSweep(t *testing.T) {
	t.Parallel()
	const grace = 3 * time.Second
	s := startStack(t, "SNAPQ_RETENTION_DAYS=1", "SNAPQ_SWEEP_GRACE="+grace.String(), "SNAPQ_SWEEP_INTERVAL=0",
		"SNAPQ_ADMIN_TOKEN="+retentionAdminToken)
	site := fixtureSite(t)
	began := time.Now()
	phase := func(what string) { t.Logf("%6.1fs %s", time.Since(began).Seconds(), what) }
	mc, err := testenv.LocalS3().Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	// Only the admin token opens the route.
	var e errResp
	if code, _ := s.doWith("POST", "/v1/admin/sweep", nil, map[string]any{"dry_run": true}, &e); code != http.StatusUnauthorized {
		t.Errorf("sweep without the admin token: status %d, want 401", code)
	}

	// A suite (1-day retention, the newest 5 runs) on an unchanged page: run 1
	// is approved, so its images are the baselines; run 2 stores the same
	// bytes, content-addressed, under the same keys.
	var suite struct {
		ID        string `json:"id"`
		Retention *struct {
			Days     int `json:"days"`
			KeepRuns int `json:"keep_runs"`
		} `json:"retention"`
	}
	if code := s.do("POST", "/v1/suites", map[string]any{"name": "kept", "targets": []map[string]any{{"url": site + "/short", "name": "short"}},
		"retention": map[string]any{"days": 1, "keep_runs": 5}}, &suite); code != http.StatusCreated || suite.Retention == nil ||
		suite.Retention.Days != 1 || suite.Retention.KeepRuns != 5 {
		t.Fatalf("create suite: status %d, retention %+v", code, suite.Retention)
	}
	if code := s.do("POST", "/v1/suites", map[string]any{"name": "bad", "targets": []map[string]any{{"url": site + "/short"}},
		"retention": map[string]any{"days": -1, "keep_runs": 0}}, &e); code != http.StatusBadRequest || len(e.Error.Fields) != 2 {
		t.Errorf("bad retention: status %d, %+v; want 400 naming retention.days and retention.keep_runs", code, e.Error)
	}
	r1 := s.waitRun(s.startRun(suite.ID), 2*time.Minute)
	var approved runResp
	if code := s.do("POST", "/v1/runs/"+r1.ID+"/approve", map[string]any{"all": true}, &approved); code != http.StatusOK {
		t.Fatalf("approve: status %d", code)
	}
	r2 := s.waitRun(s.startRun(suite.ID), 2*time.Minute)
	if r2.Status != "passed" {
		t.Fatalf("second run %s, want passed (an unchanged page)", r2.Status)
	}

	phase("two suite runs, the first approved")
	// Batch A will expire; batch B is recent and stays.
	submit := func(targets ...map[string]any) string {
		t.Helper()
		var b batchResp
		if code := s.do("POST", "/v1/batches", map[string]any{"targets": targets}, &b); code != http.StatusAccepted {
			t.Fatalf("submit: status %d", code)
		}
		if done := s.waitBatch(b.ID, 2*time.Minute); done.Counts["succeeded"] != len(targets) {
			t.Fatalf("batch %s: %v", b.ID, done.Counts)
		}
		return b.ID
	}
	batchA := submit(map[string]any{"url": site + "/article", "name": "article", "options": map[string]any{"outputs": []string{"screenshot", "html", "markdown"}}})
	batchB := submit(map[string]any{"url": site + "/tall?h=1700", "name": "kept"})
	phase("batches A and B")

	// Back-date A, both runs' batches and the runs: run 1 is protected by its baselines.
	expired := []string{batchA, r2.BatchID}
	s.db(func(ctx context.Context, conn *pgx.Conn) {
		if _, err := conn.Exec(ctx, `UPDATE batches SET created_at = now() - interval '2 days' WHERE id = ANY($1::uuid[])`,
			[]string{batchA, r1.BatchID, r2.BatchID}); err != nil {
			t.Fatal(err)
		}
	})
	byBatch := s.keysByBatch()
	survivors := map[string]bool{}
	for b, keys := range byBatch {
		if !slices.Contains(expired, b) {
			for k := range keys {
				survivors[k] = true
			}
		}
	}
	wantGone := map[string]bool{}
	for _, b := range expired {
		for k := range byBatch[b] {
			if !survivors[k] {
				wantGone[k] = true
			}
		}
	}
	var shared []string // named by expired run 2 and by the baselines' run 1
	for k := range byBatch[r2.BatchID] {
		if byBatch[r1.BatchID][k] {
			shared = append(shared, k)
		}
	}
	if len(shared) == 0 || len(wantGone) == 0 {
		t.Fatalf("setup: %d keys shared by run 2 and the baselines, %d keys only expired rows name", len(shared), len(wantGone))
	}

	// Orphans planted in the bucket (one content-addressed, one per-attempt
	// key of a job that never existed), a foreign key that is not ours, and
	// the object of one of B's rows deleted.
	orphans := []string{"content/sha256/ab/ab" + strings.Repeat("0", 62),
		"batches/0190a000-0000-7000-8000-00000000beef/jobs/0190a000-0000-7000-8000-00000000f00d/lost.png"}
	for _, k := range append(slices.Clone(orphans), "elsewhere/readme.txt") {
		if _, err := mc.PutObject(context.Background(), s.bucket, k, bytes.NewReader([]byte("planted "+k)), -1, minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var lostKey string
	for k := range byBatch[batchB] {
		if strings.HasPrefix(k, "content/") && !survivorsElsewhere(byBatch, batchB, k) {
			lostKey = k
			break
		}
	}
	if lostKey == "" {
		t.Fatal("setup: batch B has no object of its own")
	}
	if err := mc.RemoveObject(context.Background(), s.bucket, lostKey, minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(grace + time.Second) // every object is now older than the grace

	// Dry run: the report says what would go; the bucket and rows are unchanged.
	before := s.sortedBucketKeys()
	start := time.Now()
	dry := s.sweep(true)
	t.Logf("dry run in %v: %d batches (%d runs), %d objects, %d bytes; %d protected; %d orphans; %d missing of %d checked",
		time.Since(start).Round(time.Millisecond), dry.Retention.Batches, dry.Retention.Runs, dry.Retention.Objects, dry.Retention.Bytes,
		dry.Retention.Protected, dry.Orphans.Deleted, dry.Missing.Missing, dry.Missing.Checked)
	if after := s.sortedBucketKeys(); !slices.Equal(before, after) {
		t.Errorf("the dry run changed the bucket: %d objects before, %d after", len(before), len(after))
	}
	if got := s.keysByBatch(); len(got[batchA]) == 0 || len(got[r2.BatchID]) == 0 {
		t.Errorf("the dry run deleted rows")
	}
	if !dry.DryRun || dry.Retention.Batches != 2 || dry.Retention.Runs != 1 || dry.Retention.Objects != len(wantGone) ||
		dry.Orphans.Deleted != len(orphans) || dry.Missing.Missing != 1 || dry.Retention.Protected < 1 {
		t.Errorf("dry run report: %+v; want 2 batches (1 run), %d objects, %d orphans, 1 missing, run 1 protected",
			dry, len(wantGone), len(orphans))
	}

	// The pass.
	start = time.Now()
	rep := s.sweep(false)
	t.Logf("pass in %v: %d batches, %d objects, %d bytes deleted; %d orphans (%d bytes); missing %v",
		time.Since(start).Round(time.Millisecond), rep.Retention.Batches, rep.Retention.Objects, rep.Retention.Bytes,
		rep.Orphans.Deleted, rep.Orphans.Bytes, rep.Missing.Keys)
	var gotExpired []string
	for _, x := range rep.Retention.Expired {
		gotExpired = append(gotExpired, x.BatchID)
	}
	sort.Strings(gotExpired)
	sort.Strings(expired)
	if !slices.Equal(gotExpired, expired) {
		t.Errorf("expired batches %v, want A and run 2's %v", gotExpired, expired)
	}
	if !slices.Equal(rep.Missing.Keys, []string{lostKey}) {
		t.Errorf("missing keys %v, want [%s]", rep.Missing.Keys, lostKey)
	}
	// The bucket holds exactly what it held, less the expired-only keys and the orphans.
	var want []string
	for _, k := range before {
		if !wantGone[k] && !slices.Contains(orphans, k) {
			want = append(want, k)
		}
	}
	if got := s.sortedBucketKeys(); !slices.Equal(want, got) {
		t.Errorf("bucket after the pass: %d objects, want %d\n got %v\nwant %v", len(got), len(want), got, want)
	}
	after := s.keysByBatch()
	if len(after[batchA]) != 0 || len(after[r2.BatchID]) != 0 || len(after[r1.BatchID]) == 0 || len(after[batchB]) == 0 {
		t.Errorf("rows after the pass: A %d, run 2 %d, run 1 %d, B %d keys; want A and run 2 gone",
			len(after[batchA]), len(after[r2.BatchID]), len(after[r1.BatchID]), len(after[batchB]))
	}
	var batches int
	s.db(func(ctx context.Context, conn *pgx.Conn) {
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM batches WHERE id = ANY($1::uuid[])`, expired).Scan(&batches); err != nil {
			t.Fatal(err)
		}
	})
	if batches != 0 {
		t.Errorf("%d expired batch rows left", batches)
	}
	// Every baseline's image is still served, the shared content object included.
	var baselines struct {
		Baselines []struct {
			URL    string `json:"url"`
			Active bool   `json:"active"`
		} `json:"baselines"`
	}
	if code := s.do("GET", "/v1/suites/"+suite.ID+"/baselines", nil, &baselines); code != http.StatusOK || len(baselines.Baselines) == 0 {
		t.Fatalf("baselines: status %d, %d", code, len(baselines.Baselines))
	}
	for _, b := range baselines.Baselines {
		if resp, img := s.get(strings.TrimPrefix(b.URL, s.api)); resp.StatusCode != http.StatusOK || len(img) == 0 || !b.Active {
			t.Errorf("baseline image %s (active %v): status %d, %d bytes", b.URL, b.Active, resp.StatusCode, len(img))
		}
	}
	for _, k := range shared {
		if _, err := mc.StatObject(context.Background(), s.bucket, k, minio.StatObjectOptions{}); err != nil {
			t.Errorf("the content object %s that expired run 2 shared with the baselines is gone: %v", k, err)
		}
	}

	// A second pass deletes nothing.
	again := s.sweep(false)
	if again.Retention.Batches != 0 || again.Retention.Objects != 0 || again.Orphans.Deleted != 0 {
		t.Errorf("second pass deleted %d batches, %d objects, %d orphans; want none",
			again.Retention.Batches, again.Retention.Objects, again.Orphans.Deleted)
	}

	// Metrics count what the passes deleted (the dry run counted nothing).
	_, metrics := s.get("/metrics")
	for _, want := range []string{
		fmt.Sprintf(`snapq_sweep_deleted_objects_total{reason="retention"} %d`, rep.Retention.Objects),
		fmt.Sprintf(`snapq_sweep_deleted_objects_total{reason="orphan"} %d`, rep.Orphans.Deleted),
		`snapq_sweep_missing_objects 1`,
		`snapq_sweep_passes_total{dry_run="true"} 1`,
		`snapq_sweep_deleted_batches_total 2`,
	} {
		if !strings.Contains(string(metrics), want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	phase("dry run, pass, second pass")
	// Scheduled: two more api replicas enqueue a pass every 2 s; the worker
	// runs one per interval and removes a new orphan once it is past the grace.
	for range 2 {
		port, err := testenv.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		p := &testenv.Procs{BinDir: binDir, LogDir: t.TempDir(),
			Env: append(append([]string(nil), s.procs.Env...), "SNAPQ_HTTP_ADDR=127.0.0.1:"+port, "SNAPQ_SWEEP_INTERVAL=2s")}
		t.Cleanup(p.StopAll)
		if err := p.Start("api"); err != nil {
			t.Fatal(err)
		}
		if err := testenv.WaitReady("http://127.0.0.1:"+port, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	late := "batches/0190a000-0000-7000-8000-00000000beef/jobs/0190a000-0000-7000-8000-00000000f00d/late.png"
	if _, err := mc.PutObject(context.Background(), s.bucket, late, bytes.NewReader([]byte("late")), -1, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	passesBefore := s.logCount("worker", "orphan sweep")
	start = time.Now()
	for {
		if _, err := mc.StatObject(context.Background(), s.bucket, late, minio.StatObjectOptions{}); err != nil {
			break
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("the scheduled pass did not remove an orphan within 20 s (worker ran %d passes)",
				s.logCount("worker", "orphan sweep")-passesBefore)
		}
		time.Sleep(250 * time.Millisecond)
	}
	elapsed := time.Since(start)
	phase("the scheduled pass removed the orphan")
	time.Sleep(4 * time.Second)
	elapsed += 4 * time.Second
	passes := s.logCount("worker", "orphan sweep") - passesBefore
	t.Logf("scheduled: orphan removed after %v; %d passes in %v with two replicas scheduling every 2 s",
		(elapsed - 4*time.Second).Round(time.Millisecond), passes, elapsed.Round(time.Millisecond))
	if limit := int(elapsed/(2*time.Second)) + 2; passes < 1 || passes > limit {
		t.Errorf("%d scheduled passes in %v, want 1-%d: one per 2 s interval, not one per replica", passes, elapsed, limit)
	}
}

// survivorsElsewhere reports whether a batch other than own names key.
func survivorsElsewhere(byBatch map[string]map[string]bool, own, key string) bool {
	for b, keys := range byBatch {
		if b != own && keys[key] {
			return true
		}
	}
	return false
}
