package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/minio/minio-go/v7"

	"github.com/snapq/snapq/internal/testenv"
)

// dedupPages is the fixture of TestStorageGrowsWithChange: count small
// pages of two 240 px blocks (two segments at 320x240). changed names the
// one page whose second block differs (0: none).
type dedupPages struct {
	count   int
	changed atomic.Int32
}

func (p *dedupPages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var n int
	if _, err := fmt.Sscanf(r.URL.Path, "/p/%d", &n); err != nil || n < 1 || n > p.count {
		http.NotFound(w, r)
		return
	}
	bottom := fmt.Sprintf("page %d, bottom", n)
	if int(p.changed.Load()) == n {
		bottom = fmt.Sprintf("page %d, bottom, CHANGED", n)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprintf(w, `<!doctype html><html><head><style>body{margin:0;font:16px sans-serif}
		div{height:240px;padding:20px;box-sizing:border-box}</style></head><body>
		<div style="background:#e8eef8">page %d, top</div><div style="background:#f8ece8">%s</div></body></html>`, n, bottom)
}

// bucketKeys lists the stack's bucket: key → size.
func (s *stack) bucketKeys() map[string]int64 {
	s.t.Helper()
	mc, err := testenv.LocalS3().Client(context.Background())
	if err != nil {
		s.t.Fatal(err)
	}
	out := map[string]int64{}
	for o := range mc.ListObjects(context.Background(), s.bucket, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			s.t.Fatal(o.Err)
		}
		out[o.Key] = o.Size
	}
	return out
}

// namedBy says which rows name an object key: "kind name" of each artifact,
// "thumbnail of <name>" of each thumbnail.
func (s *stack) namedBy(key string) []string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.env("SNAPQ_DATABASE_URL"))
	if err != nil {
		s.t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT kind || ' ' || name FROM artifacts WHERE object_key = $1
		UNION SELECT 'thumbnail of ' || a.name FROM thumbnails t JOIN artifacts a ON a.id = t.artifact_id WHERE t.object_key = $1`, key)
	if err != nil {
		s.t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		s.t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

// The storage proof with real MinIO and Postgres: a 50-page suite
// run 10 times on an unchanged site leaves the bucket at most 5 % larger
// than after run 1 (content-addressed storage: re-runs add rows, not
// bytes), and after one page changes, the only new objects are that page's
// changed segment and its comparison's diff (with the diff's thumbnail).
// `make test` runs it at 10 pages x 3 runs; SNAPQ_PROOF_SCALE=full (`make
// proofs`) at 50 x 10.
func TestStorageGrowsWithChange(t *testing.T) {
	t.Parallel()
	start := time.Now()
	dedupPageCount := proofScale(t, 10, 50)
	unchangedRuns := proofScale(t, 3, 10)
	s := startStack(t, "SNAPQ_WORKER_CONCURRENCY=4")
	pages := &dedupPages{count: dedupPageCount}
	srv := httptest.NewServer(pages)
	t.Cleanup(srv.Close)

	targets := make([]map[string]any, dedupPageCount)
	for i := range targets {
		targets[i] = map[string]any{"url": fmt.Sprintf("%s/p/%d", srv.URL, i+1), "name": fmt.Sprintf("p%02d", i+1),
			"viewports": []map[string]any{{"width": 320, "height": 240}}}
	}
	var suite struct {
		ID string `json:"id"`
	}
	if code := s.do("POST", "/v1/suites", map[string]any{"name": "fifty", "targets": targets}, &suite); code != http.StatusCreated {
		t.Fatalf("create suite: %d", code)
	}
	run := func(i int) runResp {
		t.Helper()
		began := time.Now()
		r := s.waitRun(s.startRun(suite.ID), 5*time.Minute)
		t.Logf("run %d: %s, %v in %s", i, r.Status, r.Counts, time.Since(began).Round(100*time.Millisecond))
		return r
	}
	sum := func(m map[string]int64) (n int64) {
		for _, b := range m {
			n += b
		}
		return n
	}

	r1 := run(1)
	if r1.Counts["new"] != 2*dedupPageCount {
		t.Fatalf("run 1: %s %v, want %d new segments: %s", r1.Status, r1.Counts, 2*dedupPageCount, statuses(r1))
	}
	if code := s.do("POST", "/v1/runs/"+r1.ID+"/approve", map[string]any{"all": true}, nil); code != http.StatusOK {
		t.Fatalf("approve run 1: %d", code)
	}
	after1 := s.bucketKeys()
	bytes1 := sum(after1)
	for i := 2; i <= unchangedRuns; i++ {
		if r := run(i); r.Status != "passed" || r.Counts["passed"] != 2*dedupPageCount {
			t.Fatalf("unchanged run %d: %s %v: %s", i, r.Status, r.Counts, statuses(r))
		}
	}
	afterUnchanged := s.bucketKeys()
	bytesUnchanged := sum(afterUnchanged)
	t.Logf("bucket after run 1: %d objects, %d bytes; after run %d: %d objects, %d bytes (%.4f×)",
		len(after1), bytes1, unchangedRuns, len(afterUnchanged), bytesUnchanged, float64(bytesUnchanged)/float64(bytes1))
	if float64(bytesUnchanged) > 1.05*float64(bytes1) {
		t.Errorf("%d runs of an unchanged site grew the bucket from %d to %d bytes, more than 5 %%", unchangedRuns, bytes1, bytesUnchanged)
	}
	if n := len(afterUnchanged) - len(after1); n != 0 {
		t.Errorf("unchanged runs added %d objects", n)
	}

	// One page changes: its second segment is new bytes, and so is its
	// comparison's diff; nothing else is.
	pages.changed.Store(7)
	rChanged := run(unchangedRuns + 1)
	if rChanged.Status != "failed" || rChanged.Counts["failed"] != 1 || rChanged.Counts["passed"] != 2*dedupPageCount-1 {
		t.Fatalf("run with p07 changed: %s %v: %s", rChanged.Status, rChanged.Counts, statuses(rChanged))
	}
	afterChanged := s.bucketKeys()
	var added int64
	var addedBy []string
	for key, n := range afterChanged {
		if _, ok := afterUnchanged[key]; ok {
			continue
		}
		added += n
		by := s.namedBy(key)
		addedBy = append(addedBy, fmt.Sprintf("%s (%d bytes)", strings.Join(by, ", "), n))
		for _, name := range by {
			segment := name == "screenshot p07-320x240-002.png"
			diff := strings.HasPrefix(name, "diff p07") || strings.HasPrefix(name, "thumbnail of p07") && strings.Contains(name, "diff")
			if !segment && !diff {
				t.Errorf("new object %s (%d bytes) is named by %q: not p07's changed segment or its diff", key, n, name)
			}
		}
	}
	slices.Sort(addedBy)
	t.Logf("run %d (p07's bottom changed) added %d bytes in %d objects: %v", unchangedRuns+1, added, len(addedBy), addedBy)
	if !slices.ContainsFunc(addedBy, func(s string) bool { return strings.HasPrefix(s, "screenshot p07-320x240-002.png") }) {
		t.Errorf("the changed segment is not among the new objects: %v", addedBy)
	}
	t.Logf("TestStorageGrowsWithChange took %s (%d runs of %d pages)", time.Since(start).Round(time.Second), unchangedRuns+1, dedupPageCount)
}
