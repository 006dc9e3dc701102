// Command bench measures snapq end to end against a floor measured in the
// same run, and prints the ratio. The machines are shared and noisy, so only
// the ratio means something.
//
// Corpus: ~100 mixed pages (short, long articles with a fixed header, 20–40k
// px pages, image-heavy, late SPA content, 404s) from the fixture site,
// served on several loopback addresses so they are different sites.
//
//	(a) floor: issue 31's floor, a bare go-rod loop over one warm browser, one
//	    long-lived tab per worker in one shared context, navigate, wait for
//	    load, one full-page PNG per URL the way rod takes it
//	    (Page.Screenshot(true, nil)), nothing cut or stored
//	(b) e2e:   API → Redis → worker → MinIO → status succeeded, with snapq's
//	    clean slate per job
//	(c) bandfloor (-bandfloor, on by default): the same bare loop capturing
//	    with snapq's own segmented code (capture.Shoot), so e2e/bandfloor is
//	    the cost of the pipeline and isolation alone
//
// First, with no services, the pixel diff of visual regression is measured
// against a naive image.At comparison (bench/diff.go; -diff-only stops there).
//
// -sandbox measures only what Chromium's sandbox and site isolation cost
// (bench/sandbox.go): "bench: site-isolation: on / off = R".
//
// -agents measures synchronous capture latency (bench/agents.go).
//
// -sse measures live events: 200 clients on two api replicas following one
// batch; events/s per replica and commit-to-receipt latency (bench/sse.go).
//
// Both run at the same concurrency, interleaved over several rounds. The last
// line is "bench: e2e/floor = R".
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/snapq/snapq/internal/testenv"
)

type options struct {
	rounds      int
	concurrency int
	pages       int
	addrs       string
	chrome      string
	lib         bool
	verbose     bool
	outputs     bool
	diffOnly    bool
	scale       bool // the scale bench (scale.go) instead of floor/e2e
	noWorker    bool // startStack starts the api only
	sandbox     bool
	allow       string   // SNAPQ_EGRESS_ALLOW_CIDRS for the corpus sites
	env         []string // extra environment for api and worker (the soak's TMPDIR, pprof address)
	soak        soakOptions
	cluster     clusterOptions
	sse         sseOptions
	agents      agentsOptions
	filters     filtersOptions
	noise       noiseOptions
	archive     bool // the archive bench (archive.go)
	session     bool // the session command bench (session.go)
	sessionTabs int  // -session: the sessions held open while a batch runs (the worker's SNAPQ_SESSION_TABS)
	batchPages  int  // -session: pages of each batch timed with and without sessions open
	archiveMiB  int
	root        string // build api and worker from this tree (default: the working directory)
	suffix      string // of the stack's bin and logs directories under .data/bench
	diff        bool   // measure the pixel diff first
	libOnly     bool   // -lib-only
	libModes    string // -lib-modes
	libFlags    string // -lib-flags
	bandFloor   bool   // -bandfloor
	base        string // -base: a git revision whose api and worker also run the e2e rounds
}

func main() {
	var o options
	flag.IntVar(&o.rounds, "rounds", 3, "interleaved rounds")
	flag.IntVar(&o.concurrency, "concurrency", 4, "pages in flight (floor tabs = worker concurrency)")
	flag.IntVar(&o.pages, "pages", 100, "pages in the corpus")
	flag.StringVar(&o.addrs, "addrs", "127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5", "loopback addresses serving the corpus")
	flag.BoolVar(&o.outputs, "outputs", true, "also measure one load for 4 outputs against one load per output")
	flag.BoolVar(&o.verbose, "v", false, "print CPU time per page by process and the e2e time breakdown")
	flag.BoolVar(&o.libOnly, "lib-only", false, "only measure the capture package alone against the floor, with its stage table (needs only Chromium)")
	flag.StringVar(&o.libModes, "lib-modes", "", "-lib-only: also measure the capture package with these screenshot modes (comma-separated: full, viewport), each its own series")
	flag.StringVar(&o.libFlags, "lib-flags", "", "-lib-only: also measure the capture package in a Chromium started with these extra flags (comma-separated name or name=value), the series lib+flags")
	flag.BoolVar(&o.bandFloor, "bandfloor", true, "also run the band floor: the bare loop capturing with snapq's own segmented code, printing e2e/bandfloor")
	flag.BoolVar(&o.lib, "lib", false, "also measure the capture package alone (clean slate, no queue or storage)")
	flag.StringVar(&o.chrome, "chrome", testenv.Getenv("SNAPQ_CHROME_BIN", "/usr/bin/chromium"), "chromium binary")
	flag.BoolVar(&o.diff, "diff", true, "measure the pixel diff first (diff.go)")
	flag.BoolVar(&o.diffOnly, "diff-only", false, "only measure the pixel diff (needs no services)")
	flag.StringVar(&diffProfile, "diff-cpuprofile", "", "write a CPU profile of snapq's side of diff/pixelmatch to this file")
	flag.BoolVar(&o.session, "session", false, "only measure a session's click round trip against a bare go-rod click, and batch pages/s with and without the most sessions open (session.go)")
	flag.IntVar(&o.sessionTabs, "session-tabs", 2, "-session: session tabs of the worker, all held open (and clicking) during the 'with sessions' batches")
	flag.IntVar(&o.batchPages, "session-batch-pages", 24, "-session: pages of each batch timed with and without sessions open (-rounds rounds, interleaved)")
	flag.BoolVar(&o.scale, "scale", false, "only measure 2 workers x 2 tabs against 1 worker x 4 tabs (scale.go)")
	flag.BoolVar(&o.sandbox, "sandbox", false, "only measure Chromium's sandbox and site isolation on the capture package (needs only Chromium; -pages, -rounds, -concurrency apply)")
	flag.BoolVar(&o.archive, "archive", false, "only measure a batch archive of -archive-mib MiB of planted artifacts: the api's RSS growth while it streams (archive.go; needs no Chromium)")
	flag.IntVar(&o.archiveMiB, "archive-mib", 1024, "MiB of artifacts the -archive bench plants")
	flag.StringVar(&o.base, "base", "", "also run the e2e rounds on the api and worker built from this git revision (before/after in one run)")
	o.soak.flags()
	o.cluster.flags()
	o.sse.flags()
	o.agents.flags()
	o.filters.flags()
	o.noise.flags()
	pprofAddr := flag.String("worker-pprof", "", "serve the measured worker's Go profiler on this loopback address (SNAPQ_PPROF_ADDR), e.g. 127.0.0.1:6061, to profile it during the rounds")
	flag.Parse()
	if *pprofAddr != "" {
		o.env = append(o.env, "SNAPQ_PPROF_ADDR="+*pprofAddr)
	}
	if o.noise.on {
		if err := noiseBench(o); err != nil {
			fmt.Fprintln(os.Stderr, "bench -noise:", err)
			os.Exit(1)
		}
		return
	}
	if o.filters.on {
		if err := filtersBench(o.filters); err != nil {
			fmt.Fprintln(os.Stderr, "bench -filters:", err)
			os.Exit(1)
		}
		return
	}
	if o.agents.on {
		if err := agentsBench(o); err != nil {
			fmt.Fprintln(os.Stderr, "bench -agents:", err)
			os.Exit(1)
		}
		return
	}
	if o.sse.on {
		if err := sseBench(o); err != nil {
			fmt.Fprintln(os.Stderr, "bench -sse:", err)
			os.Exit(1)
		}
		return
	}
	if o.archive {
		if err := archiveBench(o); err != nil {
			fmt.Fprintln(os.Stderr, "bench -archive:", err)
			os.Exit(1)
		}
		return
	}
	if o.session {
		if err := sessionBench(o); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if o.sandbox {
		if err := sandboxBench(o); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if o.cluster.on {
		if err := clusterBench(o); err != nil {
			fmt.Fprintln(os.Stderr, "bench -cluster:", err)
			os.Exit(1)
		}
		return
	}
	if o.soak.on {
		if err := soak(o); err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			os.Exit(1)
		}
		return
	}
	if o.libOnly {
		if err := libOnly(o); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if o.scale {
		if err := runScale(o); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if o.diff || o.diffOnly {
		if err := diffBench(); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
	if o.diffOnly {
		return
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// allowCIDRs is SNAPQ_EGRESS_ALLOW_CIDRS for the comma-separated corpus addresses.
func allowCIDRs(addrs string) string {
	var allow []string
	for _, a := range strings.Split(addrs, ",") {
		allow = append(allow, strings.TrimSpace(a)+"/32")
	}
	return strings.Join(allow, ",")
}

func pps(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }

// serveSites serves the fixture site on every address (loopback only).
func serveSites(addrs []string) ([]string, func(), error) {
	var sites []string
	var servers []*http.Server
	stop := func() {
		for _, s := range servers {
			s.Close()
		}
	}
	for _, a := range addrs {
		ip := net.ParseIP(strings.TrimSpace(a))
		if ip == nil || !ip.IsLoopback() {
			stop()
			return nil, nil, fmt.Errorf("address %q is not loopback; the bench only targets loopback", a)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
		if err != nil {
			stop()
			return nil, nil, err
		}
		site := "http://" + ln.Addr().String()
		srv := &http.Server{Handler: withFrames(&sites, site), ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln) //nolint:errcheck
		servers = append(servers, srv)
		sites = append(sites, site)
	}
	return sites, stop, nil
}

// buildCorpus mixes page kinds in fixed proportions, spread over the sites.
func buildCorpus(sites []string, n int) []string {
	kinds := []func(i int) string{
		func(i int) string { return "/short?i=" + strconv.Itoa(i) },
		func(i int) string { return "/short?i=" + strconv.Itoa(i) },
		func(i int) string { return "/article?n=" + strconv.Itoa(30+i%30) },
		func(i int) string { return "/article?n=" + strconv.Itoa(40+i%20) },
		func(i int) string { return "/tall?h=" + strconv.Itoa(20000+(i*977)%20000) },
		func(i int) string { return "/images?n=" + strconv.Itoa(12+i%12) },
		func(i int) string { return "/images?n=" + strconv.Itoa(16+i%8) },
		func(i int) string { return "/spa?i=" + strconv.Itoa(i) },
		func(i int) string { return "/status/404?i=" + strconv.Itoa(i) },
		func(i int) string { return "/tall?h=" + strconv.Itoa(3000+i*37) },
	}
	out := make([]string, n)
	for i := range n {
		out[i] = sites[i%len(sites)] + kinds[i%len(kinds)](i)
	}
	return out
}

// stack is the snapq deployment under test.
type stack struct {
	api     string
	procs   *testenv.Procs
	drop    func() // drops the schema and releases the Redis database
	bucket  string
	dbURL   string
	mcDrop  func()
	verbose bool
	options map[string]any // the batch's options; nil: the defaults
	batch   string         // the last batch runBatch ran
	metrics string         // the worker's /metrics URL, when it serves one
	groups  procGroups     // the stack's processes (procs.go)
}

func startStack(ctx context.Context, o options) (*stack, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	root := cmp.Or(o.root, cwd) // the sources the binaries are built from
	work := filepath.Join(cwd, ".data", "bench")
	bin := filepath.Join(work, "bin"+o.suffix)
	logs := filepath.Join(work, "logs"+o.suffix)
	for _, d := range []string{bin, logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := testenv.BuildBinaries(root, bin); err != nil {
		return nil, err
	}
	dbURL, drop, err := testenv.NewSchema(ctx, testenv.Getenv("SNAPQ_TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/snapq_test?sslmode=disable"))
	if err != nil {
		return nil, fmt.Errorf("postgres: %w (run scripts/services.sh up)", err)
	}
	claimCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	redisDB, err := testenv.ClaimRedisDB(claimCtx, "bench")
	cancel()
	if err != nil {
		drop()
		return nil, fmt.Errorf("redis: %w", err)
	}
	dropSchema := drop
	drop = func() { dropSchema(); redisDB.Release() }
	s3 := testenv.LocalS3()
	mc, err := s3.Client(ctx)
	if err != nil {
		drop()
		return nil, fmt.Errorf("minio: %w", err)
	}
	port, err := testenv.FreePort()
	if err != nil {
		drop()
		return nil, err
	}
	bucket := "snapq-bench-" + testenv.RandomSuffix(4)
	st := &stack{api: "http://127.0.0.1:" + port, drop: drop, bucket: bucket, dbURL: dbURL, verbose: o.verbose,
		mcDrop: func() { testenv.RemoveBucket(mc, bucket) }}
	st.procs = &testenv.Procs{BinDir: bin, LogDir: logs, Env: append(os.Environ(),
		"SNAPQ_HTTP_ADDR=127.0.0.1:"+port,
		"SNAPQ_DATABASE_URL="+dbURL,
		"SNAPQ_REDIS_URL="+redisDB.URL(),
		"SNAPQ_S3_ENDPOINT="+s3.Endpoint, "SNAPQ_S3_ACCESS_KEY="+s3.AccessKey, "SNAPQ_S3_SECRET_KEY="+s3.SecretKey,
		"SNAPQ_S3_BUCKET="+bucket, "SNAPQ_S3_USE_SSL=false",
		"SNAPQ_CHROME_BIN="+o.chrome,
		"SNAPQ_WORKER_CONCURRENCY="+strconv.Itoa(o.concurrency),
		"SNAPQ_LOG_LEVEL=warn",
		"SNAPQ_EGRESS_ALLOW_CIDRS="+o.allow,
		"SNAPQ_AUTH=off",     // loopback only
		"SNAPQ_RATE_LIMIT=0", // the bench polls faster than a client would
		// every bench client is one key (auth is off): -sse follows with 200 streams
		"SNAPQ_SSE_MAX_STREAMS_PER_KEY=0",
	)}
	st.procs.Env = append(st.procs.Env, o.env...) // later entries win

	if err := st.procs.Start("api"); err != nil {
		st.close()
		return nil, err
	}
	if err := testenv.WaitReady(st.api, 30*time.Second); err != nil {
		st.close()
		return nil, fmt.Errorf("%w\n%s", err, st.procs.Log("api", 2000))
	}
	if o.noWorker {
		return st, nil
	}
	if err := st.procs.Start("worker"); err != nil {
		st.close()
		return nil, err
	}
	return st, nil
}

func (s *stack) close() {
	s.procs.StopAll()
	s.mcDrop()
	s.drop()
}

// runBatch submits the corpus as one batch and waits until every job is
// final. It returns the wall time. (It samples nothing itself: reading every
// Chromium process's smaps each second took ~0.2 cores from the e2e stack,
// which the floor's rounds were not charged; rendererPSS samples both alike.)
func (s *stack) runBatch(urls []string) (time.Duration, error) {
	req := map[string]any{"urls": urls, "labels": map[string]string{"source": "bench"}}
	if s.options != nil {
		req["options"] = s.options
	}
	body, _ := json.Marshal(req)
	start := time.Now()
	resp, err := http.Post(s.api+"/v1/batches", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	var b struct {
		ID string `json:"id"`
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal(raw, &b) != nil {
		return 0, fmt.Errorf("submit: %d %s", resp.StatusCode, raw)
	}
	deadline := start.Add(15 * time.Minute)
	for {
		var cur struct {
			Status string         `json:"status"`
			Counts map[string]int `json:"counts"`
		}
		resp, err := http.Get(s.api + "/v1/batches/" + b.ID)
		if err != nil {
			return 0, err
		}
		err = json.NewDecoder(resp.Body).Decode(&cur)
		resp.Body.Close()
		if err != nil {
			return 0, err
		}
		if cur.Status == "completed" {
			d := time.Since(start)
			s.batch = b.ID
			if cur.Counts["succeeded"] != len(urls) {
				return 0, fmt.Errorf("batch ended with %v; every bench page should succeed (see .data/bench/logs/worker.log)", cur.Counts)
			}
			if s.verbose {
				s.breakdown(b.ID)
			}
			return d, nil
		}
		if time.Now().After(deadline) {
			return 0, errors.New("batch did not complete in 15 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// samplePeak calls sample every second until the returned function is called, which
// returns the largest value seen. Reading smaps of every Chromium process costs CPU:
// sample sparingly.
func samplePeak(sample func() float64) func() float64 {
	var mu sync.Mutex
	peak := 0.0
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			v := sample()
			mu.Lock()
			peak = max(peak, v)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() float64 {
		close(done)
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// treePSSMiB sums Pss of pid and all its descendants from /proc.
func treePSSMiB(root int) float64 {
	if root == 0 {
		return 0
	}
	_, children := procTable()
	total := 0.0
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		total += pssKiB(pid)
		queue = append(queue, children[pid]...)
	}
	return total / 1024
}

func pssKiB(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "Pss:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				v, _ := strconv.ParseFloat(f[1], 64)
				return v
			}
		}
	}
	return 0
}

// breakdown prints where an e2e job's time went, averaged over the batch.
func (s *stack) breakdown(batchID string) {
	resp, err := http.Get(s.api + "/v1/batches/" + batchID + "/jobs?limit=1000")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	var list struct {
		Jobs []struct {
			CreatedAt  time.Time  `json:"created_at"`
			StartedAt  *time.Time `json:"started_at"`
			FinishedAt *time.Time `json:"finished_at"`
			Result     *struct {
				TimingsMS map[string]int64 `json:"timings_ms"`
			} `json:"result"`
		} `json:"jobs"`
	}
	if json.NewDecoder(resp.Body).Decode(&list) != nil || len(list.Jobs) == 0 {
		return
	}
	sum := map[string]int64{}
	for _, j := range list.Jobs {
		if j.Result != nil {
			for k, v := range j.Result.TimingsMS {
				sum[k] += v
			}
		}
		if j.StartedAt != nil && j.FinishedAt != nil {
			sum["started→finished"] += j.FinishedAt.Sub(*j.StartedAt).Milliseconds()
		}
	}
	keys := make([]string, 0, len(sum))
	for k := range sum {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, sum[k]/int64(len(list.Jobs))))
	}
	fmt.Printf("bench: e2e mean ms per job: %s\n", strings.Join(parts, ", "))
}
