package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/snapq/snapq/internal/testenv"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/store"
)

// maxRoundTripsPerPage is issue 27's bound: Postgres round trips of one
// captured page on the worker, from the task's start to its after-final
// hooks (host slot, start, commit, events, webhook and comparison lookups).
const maxRoundTripsPerPage = 4

// TestRoundTripsPerPage counts, with a counting pgx tracer on the worker's
// store (store.WithRoundTrips), the Postgres round trips each page of a batch
// costs while the real worker wiring (openDeps, newMux, the asynq servers,
// the dispatcher) captures it in Chromium and stores it in MinIO. Round
// trips are filed under the asynq task they ran for (its id is the job's),
// so the dispatcher's passes and the webhook delivery's task are counted
// apart. A warm-up batch first prepares the statements on the pool's
// connections; the counted batch has a webhook, so its last page also
// finishes the batch and announces the delivery, which must arrive.
func TestRoundTripsPerPage(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Postgres, Redis, MinIO and Chromium")
	}
	ctx := context.Background()
	w := startCountingWorker(t)
	w.runBatch(t, 1, "") // warm-up
	w.rt.Reset()
	hooks := make(chan struct{}, 4)
	receiver := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		hooks <- struct{}{}
	}))
	t.Cleanup(receiver.Close)
	js := w.runBatch(t, 3, receiver.URL)
	worst := 0
	for _, j := range js {
		c := w.rt.Get(j.ID)
		worst = max(worst, c.Total())
		t.Logf("page %s: %d Postgres round trips (%d queries, %d batches; %d prepares)\n  %s",
			j.Name, c.Total(), c.Queries, c.Batches, c.Prepares, strings.Join(c.SQL, "\n  "))
	}
	other := w.rt.Get("")
	t.Logf("outside the pages' tasks (dispatcher passes): %d round trips; health-check pings: %d", other.Total(), w.rt.Pings())
	t.Logf("Postgres round trips per captured page on the worker: at most %d (bound %d)", worst, maxRoundTripsPerPage)
	if worst > maxRoundTripsPerPage {
		t.Errorf("a page cost %d Postgres round trips; want at most %d", worst, maxRoundTripsPerPage)
	}
	select {
	case <-hooks:
	case <-time.After(2 * time.Minute): // a bound against a hang: the delivery is enqueued at the batch's end
		t.Errorf("the batch's webhook was not delivered")
	}
	_ = ctx
}

// countingWorker is the worker's wiring on a store that counts round trips.
type countingWorker struct {
	d    *deps
	rt   *store.RoundTrips
	svc  *jobs.Service
	read *store.Store // an uncounted store to watch the batches
	site *httptest.Server
}

// startCountingWorker starts the worker's dependencies and servers on a
// schema, Redis database and bucket of the test's own.
func startCountingWorker(t *testing.T) *countingWorker {
	t.Helper()
	ctx := context.Background()
	dbURL := testenv.DatabaseURL(t)
	rdb := testenv.Redis(t)
	s3 := testenv.LocalS3()
	mc, err := s3.Client(ctx)
	if err != nil {
		testenv.Unavailable(t, "MinIO at "+s3.Endpoint, err)
	}
	bucket := "snapq-rt-" + testenv.RandomSuffix(6)
	t.Cleanup(func() { testenv.RemoveBucket(mc, bucket) })
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "SNAPQ_") {
			t.Setenv(name, "")
		}
	}
	for k, v := range map[string]string{"SNAPQ_DATABASE_URL": dbURL, "SNAPQ_REDIS_URL": rdb.URL(),
		"SNAPQ_S3_ENDPOINT": s3.Endpoint, "SNAPQ_S3_ACCESS_KEY": s3.AccessKey, "SNAPQ_S3_SECRET_KEY": s3.SecretKey,
		"SNAPQ_S3_BUCKET": bucket, "SNAPQ_S3_USE_SSL": "false", "SNAPQ_SESSION_TABS": "0",
		"SNAPQ_CHROME_BIN":         testenv.Getenv("SNAPQ_CHROME_BIN", "/usr/bin/chromium"),
		"SNAPQ_EGRESS_ALLOW_CIDRS": "127.0.0.1/32", "SNAPQ_WORKER_CONCURRENCY": "2", "SNAPQ_LOG_LEVEL": "warn"} {
		t.Setenv(k, v)
	}
	cfg, err := loadWorkerConfig()
	if err != nil {
		t.Fatal(err)
	}
	migrate, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(migrate.Close)
	if _, err := migrate.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	w := &countingWorker{read: migrate, rt: &store.RoundTrips{Label: func(ctx context.Context) string {
		id, _ := asynq.GetTaskID(ctx)
		return id
	}}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if w.d, err = openDeps(ctx, cfg, log, store.WithRoundTrips(w.rt)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.d.close)
	srv, lane, err := startServers(cfg, newMux(cfg, w.d, newWorkerMetrics(), log), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(time.Second); lane.Shutdown(time.Second) })
	dctx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go w.d.dispatch.Run(dctx)
	w.svc = &jobs.Service{Repo: w.d.store, Queue: w.d.tasks, Dispatch: w.d.dispatch}
	w.site = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(rw, "<!doctype html><title>%s</title><h1>Page %s</h1><p>Counted.</p>", r.URL.Path, r.URL.Path)
	}))
	t.Cleanup(w.site.Close)
	return w
}

var pageSeq atomic.Int64

// cfgMaxRetry is SNAPQ_MAX_RETRY's default, the capture task's retries.
const cfgMaxRetry = 3

// runBatch submits a batch of n pages (with a webhook when hook is set) and
// waits until every job is final; every job must succeed.
func (w *countingWorker) runBatch(t *testing.T, n int, hook string) []*jobs.Job {
	t.Helper()
	ctx := context.Background()
	var urls []string
	for range n {
		urls = append(urls, fmt.Sprintf("%q", fmt.Sprintf("%s/p%d", w.site.URL, pageSeq.Add(1))))
	}
	body := `{"urls": [` + strings.Join(urls, ",") + `]`
	if hook != "" {
		body += `, "webhook": {"url": "` + hook + `", "secret": "0123456789abcdef0123"}`
	}
	b, js, _, err := w.svc.Submit(ctx, jobs.Submission{Body: []byte(body + `}`)})
	if err != nil {
		t.Fatal(err)
	}
	// A bound against a hang, from the jobs' own budget: every attempt's timeout and retry.
	deadline := time.Now().Add(time.Duration(cfgMaxRetry+1) * (js[0].Options.JobTimeout() + jobs.TaskSlack))
	for {
		got, err := w.read.GetBatch(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status() == jobs.BatchCompleted {
			if got.Counts.Succeeded != n {
				t.Fatalf("batch counts %+v; want %d succeeded", got.Counts, n)
			}
			return js
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch %s not completed: %+v", b.ID, got.Counts)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestRoundTripsPerCrawlPage is TestRoundTripsPerPage for a crawl batch: its
// start page's completion adds the 3 leaf pages it links to (jobs/crawl.go,
// store.CompleteCrawlJob); each leaf links back to the start and to its
// siblings, all known already, and the last one finishes the batch, whose
// webhook must arrive. A warm-up crawl first prepares the statements.
func TestRoundTripsPerCrawlPage(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Postgres, Redis, MinIO and Chromium")
	}
	w := startCountingWorker(t)
	site := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html")
		dir, leaf, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if leaf != "" {
			fmt.Fprintf(rw, "<!doctype html><title>%s</title><h1>Leaf %s</h1><a href=\"/%s/\">back</a>", leaf, leaf, dir)
			for _, l := range []string{"a", "b", "c"} {
				fmt.Fprintf(rw, "<p><a href=\"/%s/%s\">%s</a>", dir, l, l)
			}
			return
		}
		fmt.Fprintf(rw, "<!doctype html><title>%s</title><h1>Start</h1>", dir)
		for _, l := range []string{"a", "b", "c"} {
			fmt.Fprintf(rw, "<p><a href=\"/%s/%s\">%s</a>", dir, l, l)
		}
	}))
	t.Cleanup(site.Close)
	w.runCrawl(t, site.URL+"/warm/", "") // warm-up
	w.rt.Reset()
	hooks := make(chan struct{}, 4)
	receiver := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		hooks <- struct{}{}
	}))
	t.Cleanup(receiver.Close)
	js := w.runCrawl(t, site.URL+"/counted/", receiver.URL)
	worst := map[bool]int{}
	for _, j := range js {
		c := w.rt.Get(j.ID)
		start := j.Crawl != nil && j.Crawl.Depth == 0
		worst[start] = max(worst[start], c.Total())
		t.Logf("crawl page %s (depth %d): %d Postgres round trips (%d queries, %d batches; %d prepares)\n  %s",
			j.URL, j.Crawl.Depth, c.Total(), c.Queries, c.Batches, c.Prepares, strings.Join(c.SQL, "\n  "))
	}
	other := w.rt.Get("")
	t.Logf("outside the pages' tasks (dispatcher passes): %d round trips; health-check pings: %d", other.Total(), w.rt.Pings())
	t.Logf("Postgres round trips per crawl page on the worker: start page %d, leaf pages at most %d (bound %d)",
		worst[true], worst[false], maxRoundTripsPerPage)
	for start, n := range worst {
		if n > maxRoundTripsPerPage {
			t.Errorf("a crawl page (start: %v) cost %d Postgres round trips; want at most %d", start, n, maxRoundTripsPerPage)
		}
	}
	select {
	case <-hooks:
	case <-time.After(2 * time.Minute): // a bound against a hang: the delivery is enqueued at the batch's end
		t.Errorf("the crawl batch's webhook was not delivered")
	}
}

// runCrawl submits a crawl batch of depth 2 from start (which links to 3
// leaves, which link to start and each other), with a webhook when hook is
// set, and waits until it completes with its 4 pages succeeded; it returns
// the batch's jobs.
func (w *countingWorker) runCrawl(t *testing.T, start, hook string) []*jobs.Job {
	t.Helper()
	ctx := context.Background()
	body := `{"crawl": {"url": "` + start + `", "max_depth": 2}`
	if hook != "" {
		body += `, "webhook": {"url": "` + hook + `", "secret": "0123456789abcdef0123"}`
	}
	b, js, _, err := w.svc.Submit(ctx, jobs.Submission{Body: []byte(body + `}`)})
	if err != nil {
		t.Fatal(err)
	}
	// A bound against a hang: two levels of pages, each with its attempts' budget.
	deadline := time.Now().Add(2 * time.Duration(cfgMaxRetry+1) * (js[0].Options.JobTimeout() + jobs.TaskSlack))
	for {
		got, err := w.read.GetBatch(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status() == jobs.BatchCompleted {
			if got.Counts.Succeeded != 4 {
				t.Fatalf("crawl batch counts %+v; want 4 succeeded", got.Counts)
			}
			all, _, err := w.read.ListJobs(ctx, b.ID, "", 100, "")
			if err != nil {
				t.Fatal(err)
			}
			return all
		}
		if time.Now().After(deadline) {
			t.Fatalf("crawl batch %s not completed: %+v", b.ID, got.Counts)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
