package main

// The soak (go run ./bench -soak; make soak): issue 12's long run. N mixed
// fixture pages go through api → Redis → worker → Chromium → MinIO while 200
// clients poll the API and a slowloris client tries to hold it. Every
// interval the worker is sampled (soakprobe.go); after the last page and a
// settle period its goroutines, open files and Chromium processes must be
// back to their baseline (taken after a warm-up batch), and nothing may be
// left in /dev/shm or in the temporary directory Chromium profiles live in.
// It prints the whole curve and a table, and fails when an invariant does.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snapq/snapq/internal/testenv"
)

// apiReadHeaderTimeout is the api's http.Server ReadHeaderTimeout
// (cmd/api/main.go): the slow-header client must be cut off by then, plus
// slowHeaderGrace for a loaded machine's scheduling.
const (
	apiReadHeaderTimeout = 10 * time.Second
	slowHeaderGrace      = 5 * time.Second
)

type soakOptions struct {
	on        bool
	pages     int
	batchSize int
	clients   int
	poll      time.Duration
	interval  time.Duration
	settle    time.Duration
	timeout   time.Duration
}

func (s *soakOptions) flags() {
	pages, _ := strconv.Atoi(testenv.Getenv("SOAK_PAGES", "2000"))
	flag.BoolVar(&s.on, "soak", false, "run the soak instead of the bench")
	flag.IntVar(&s.pages, "soak-pages", pages, "pages through the stack (default $SOAK_PAGES or 2000)")
	flag.IntVar(&s.batchSize, "soak-batch", 50, "pages per batch")
	flag.IntVar(&s.clients, "soak-clients", 200, "API clients polling batches and jobs")
	flag.DurationVar(&s.poll, "soak-poll", time.Second, "mean interval between one client's requests")
	flag.DurationVar(&s.interval, "soak-interval", 10*time.Second, "sampling interval of the worker")
	flag.DurationVar(&s.settle, "soak-settle", 2*time.Minute, "longest wait, after the last page, for the worker to return to baseline")
	flag.DurationVar(&s.timeout, "soak-timeout", 0, "longest wait for the pages (0: 10m + 3s a page)")
}

// tolerances: how far above baseline the end may be. Idle keep-alive
// connections and a spare renderer come and go; a leak grows with the pages.
func goroutineTolerance(base int) int { return max(10, base/10) }
func fdTolerance(base int) int        { return max(10, base/10) }

const chromiumTolerance = 1

// soakTargets mixes fixture pages: short, tall (segmented screenshots),
// articles as html+markdown and as pdf, images, a late SPA, a 404 and a slow
// page (3 s before the first byte).
func soakTargets(sites []string, from, n int) []map[string]any {
	kinds := []func(i int) (string, []string){
		func(i int) (string, []string) { return "/short?i=" + strconv.Itoa(i), nil },
		func(i int) (string, []string) { return "/tall?h=" + strconv.Itoa(20000+(i*977)%20000), nil },
		func(i int) (string, []string) {
			return "/article?n=" + strconv.Itoa(30+i%30), []string{"html", "markdown"}
		},
		func(i int) (string, []string) { return "/article?n=" + strconv.Itoa(20+i%20), []string{"pdf"} },
		func(i int) (string, []string) { return "/images?n=" + strconv.Itoa(12+i%12), nil },
		func(i int) (string, []string) { return "/status/404?i=" + strconv.Itoa(i), nil },
		func(i int) (string, []string) { return "/spa?i=" + strconv.Itoa(i), nil },
		func(i int) (string, []string) { return "/slow?ms=3000&i=" + strconv.Itoa(i), nil },
		func(i int) (string, []string) {
			return "/short?i=" + strconv.Itoa(i), []string{"screenshot", "html", "markdown"}
		},
		func(i int) (string, []string) { return "/tall?h=" + strconv.Itoa(3000+(i*37)%5000), nil },
	}
	out := make([]map[string]any, 0, n)
	for i := from; i < from+n; i++ {
		path, outputs := kinds[i%len(kinds)](i)
		t := map[string]any{"url": sites[i%len(sites)] + path}
		if outputs != nil {
			t["options"] = map[string]any{"outputs": outputs}
		}
		out = append(out, t)
	}
	return out
}

func soak(o options) error {
	so := o.soak
	if so.pages < 1 || so.batchSize < 1 || so.clients < 1 || so.interval <= 0 {
		return errors.New("-soak-pages, -soak-batch, -soak-clients and -soak-interval must be positive")
	}
	if so.timeout == 0 {
		so.timeout = 10*time.Minute + time.Duration(so.pages)*3*time.Second
	}
	ctx := context.Background()
	sites, stopSites, err := serveSites(strings.Split(o.addrs, ","))
	if err != nil {
		return err
	}
	defer stopSites()
	o.allow = allowCIDRs(o.addrs)

	// The worker gets a TMPDIR of its own: Chromium's profiles land there, and
	// it marks the worker's Chromium processes among the machine's others.
	tmp, err := os.MkdirTemp("", "snapq-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// Open like /tmp: a root worker's Chromium runs as SNAPQ_CHROME_USER (the
	// sandbox) and writes its singleton socket here.
	if err := os.Chmod(tmp, 0o1777); err != nil {
		return err
	}
	pprofPort, err := testenv.FreePort()
	if err != nil {
		return err
	}
	o.env = []string{"TMPDIR=" + tmp, "SNAPQ_PPROF_ADDR=127.0.0.1:" + pprofPort}
	shmBefore := listDir("/dev/shm")

	st, err := startStack(ctx, o)
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			st.close()
		}
	}()
	pr := probe{worker: st.procs.Pid("worker"), api: st.procs.Pid("api"), tmp: tmp, pprof: "http://127.0.0.1:" + pprofPort}
	fmt.Printf("soak: %d pages in batches of %d on %d loopback sites, worker concurrency %d, %d API clients, sample every %s\n",
		so.pages, so.batchSize, len(sites), o.concurrency, so.clients, so.interval)

	// Warm up (browser start, first tabs, fonts), let it settle, take the baseline.
	// Enough pages that every tab and connection pool reaches its working size.
	if _, err := submit(st.api, soakTargets(sites, 0, max(10, 6*o.concurrency))); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if err := waitIdle(st.api, 5*time.Minute); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	// The baseline settles as long as the end may: idle keep-alive connections
	// (MinIO's close after 1 min, the egress proxy's after 90 s) and their
	// goroutines would otherwise count in it.
	fmt.Printf("soak: warm-up done; settling %s for the baseline\n", so.settle)
	time.Sleep(so.settle)
	base := pr.take(0, 0)
	tmpBase := listDir(tmp)
	if base.goroutines < 0 {
		return fmt.Errorf("worker pprof at %s did not answer", pr.pprof)
	}

	// Load: API clients, the slowloris client, the pages, sampling.
	var tg targets
	var done atomic.Int64
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	pollDone := make(chan pollStats, 1)
	go func() { pollDone <- poll(loadCtx, st.api, &tg, so.clients, so.poll) }()

	start := time.Now()
	var samples []sample
	var smu sync.Mutex
	sampleNow := func() {
		s := pr.take(time.Since(start), int(done.Load()))
		smu.Lock()
		samples = append(samples, s)
		smu.Unlock()
		fmt.Printf("soak: t=%4.0fs done %5d  pss %6.0f MiB  goroutines %4d  fds %4d  chromium %3d  shm %3d  tmp %3d\n",
			s.at.Seconds(), s.done, s.pssMiB, s.goroutines, s.fds, s.chromium, s.shm, s.tmp)
	}
	sampleNow()
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		t := time.NewTicker(so.interval)
		defer t.Stop()
		for {
			select {
			case <-loadCtx.Done():
				return
			case <-t.C:
				sampleNow()
			}
		}
	}()

	type slowResult struct {
		held time.Duration
		err  error
	}
	slowDone := make(chan slowResult, 1)
	go func() {
		held, err := slowHeader(strings.TrimPrefix(st.api, "http://"), apiReadHeaderTimeout+slowHeaderGrace)
		slowDone <- slowResult{held, err}
	}()

	var batches []string
	for from := 0; from < so.pages; from += so.batchSize {
		b, err := submit(st.api, soakTargets(sites, 1000+from, min(so.batchSize, so.pages-from)))
		if err != nil {
			return fmt.Errorf("submit: %w", err)
		}
		batches = append(batches, b.ID)
		tg.add(b.ID, b.jobIDs())
	}
	counts, err := waitBatches(st.api, batches, &done, so.timeout)
	elapsed := time.Since(start)
	if err != nil {
		return err
	}
	sampleNow()
	stopLoad()
	<-samplerDone
	api := <-pollDone
	slow := <-slowDone

	// Settle: poll until the worker is back within tolerance, or settle runs out.
	settleStart := time.Now()
	var end sample
	for {
		end = pr.take(time.Since(start), int(done.Load()))
		back := end.goroutines >= 0 && end.goroutines <= base.goroutines+goroutineTolerance(base.goroutines) &&
			end.fds <= base.fds+fdTolerance(base.fds) && end.chromium <= base.chromium+chromiumTolerance
		if back || time.Since(settleStart) >= so.settle {
			break
		}
		time.Sleep(5 * time.Second)
	}
	settled := time.Since(settleStart)
	shmLeft := shmLeftovers(shmBefore)
	tmpLeft := tmpLeftovers(tmp, tmpBase)

	// Stop the stack: then no Chromium of the worker may be left, and no profile.
	st.close()
	stopped = true
	time.Sleep(2 * time.Second)
	_, afterChromium := probe{worker: -1, api: -1, tmp: tmp}.processes()
	afterTmp := tmpLeftovers(tmp, nil)
	afterShm := shmLeftovers(shmBefore)

	// Report.
	fmt.Println()
	fmt.Printf("soak: worker + Chromium PSS curve (MiB), one sample every %s:\n", so.interval)
	fmt.Printf("  %6s %6s %8s %10s %5s %8s %4s %4s\n", "t(s)", "done", "pss", "goroutines", "fds", "chromium", "shm", "tmp")
	peak := sample{}
	for _, s := range samples {
		fmt.Printf("  %6.0f %6d %8.0f %10d %5d %8d %4d %4d\n", s.at.Seconds(), s.done, s.pssMiB, s.goroutines, s.fds, s.chromium, s.shm, s.tmp)
		if s.pssMiB > peak.pssMiB {
			peak = s
		}
	}
	fmt.Printf("  %6.0f %6d %8.0f %10d %5d %8d %4d %4d  (end, after %.0fs settle)\n",
		end.at.Seconds(), end.done, end.pssMiB, end.goroutines, end.fds, end.chromium, end.shm, end.tmp, settled.Seconds())
	fmt.Printf("soak: PSS baseline %.0f MiB, start %.0f, peak %.0f (t=%.0fs), end %.0f\n",
		base.pssMiB, samples[0].pssMiB, peak.pssMiB, peak.at.Seconds(), end.pssMiB)

	var failed []string
	check := func(ok bool, what string) string {
		if ok {
			return "ok"
		}
		failed = append(failed, what)
		return "FAIL"
	}
	fmt.Printf("soak: worker fds by kind: baseline %s; end %s\n", formatCounts(base.fdKinds), formatCounts(end.fdKinds))
	fmt.Printf("soak: chromium processes by type: baseline %s; end %s\n", formatCounts(base.procKinds), formatCounts(end.procKinds))
	fmt.Println()
	fmt.Printf("  %-34s %9s %9s %10s  %s\n", "", "baseline", "end", "tolerance", "")
	row := func(name string, b, e, tol int) {
		fmt.Printf("  %-34s %9d %9d %10s  %s\n", name, b, e, "+"+strconv.Itoa(tol), check(e >= 0 && e <= b+tol, name))
	}
	row("worker goroutines", base.goroutines, end.goroutines, goroutineTolerance(base.goroutines))
	row("worker open fds", base.fds, end.fds, fdTolerance(base.fds))
	row("chromium processes", base.chromium, end.chromium, chromiumTolerance)
	fmt.Printf("  %-34s %9d %9d %10s  %s %s\n", "/dev/shm entries (chromium-named new)", base.shm, end.shm, "0 new", check(len(shmLeft) == 0, "/dev/shm leftovers"), strings.Join(shmLeft, " "))
	fmt.Printf("  %-34s %9d %9d %10s  %s %s\n", "worker TMPDIR entries (stale new)", base.tmp, end.tmp, "0 new", check(len(tmpLeft) == 0, "temp leftovers"), strings.Join(tmpLeft, " "))
	fmt.Printf("  %-34s %9s %9d %10s  %s\n", "after stop: chromium processes", "", afterChromium, "0", check(afterChromium == 0, "chromium after stop"))
	fmt.Printf("  %-34s %9s %9d %10s  %s %s\n", "after stop: TMPDIR leftovers", "", len(afterTmp), "0", check(len(afterTmp) == 0, "temp after stop"), strings.Join(afterTmp, " "))
	fmt.Printf("  %-34s %9s %9d %10s  %s %s\n", "after stop: /dev/shm leftovers", "", len(afterShm), "0", check(len(afterShm) == 0, "/dev/shm after stop"), strings.Join(afterShm, " "))

	slices.Sort(api.latencies)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	fmt.Println()
	fmt.Printf("soak: API under load: %d requests from %d clients, p50 %.1f ms, p99 %.1f ms, max %.1f ms, errors %d %s\n",
		len(api.latencies), so.clients, ms(percentile(api.latencies, 0.50)), ms(percentile(api.latencies, 0.99)),
		ms(percentile(api.latencies, 1)), api.errors, check(api.errors == 0 && len(api.latencies) > 0, "API errors"))
	for _, e := range api.examples {
		fmt.Printf("soak:   error: %s\n", e)
	}
	slowNote := fmt.Sprintf("disconnected after %.1fs (ReadHeaderTimeout %s, grace %s)", slow.held.Seconds(), apiReadHeaderTimeout, slowHeaderGrace)
	if slow.err != nil {
		slowNote = slow.err.Error()
	}
	fmt.Printf("soak: slow-header client: %s %s\n", slowNote,
		check(slow.err == nil && slow.held <= apiReadHeaderTimeout+slowHeaderGrace, "slow-header client"))
	fmt.Printf("soak: %d pages in %.1fs: %.2f pages/s; jobs %s\n", so.pages, elapsed.Seconds(), pps(so.pages, elapsed), formatCounts(counts))
	if len(failed) > 0 {
		return fmt.Errorf("invariants failed: %s (logs in .data/bench/logs)", strings.Join(failed, ", "))
	}
	fmt.Println("soak: every invariant held")
	return nil
}

type created struct {
	ID   string `json:"id"`
	Jobs []struct {
		ID string `json:"id"`
	} `json:"jobs"`
}

func (c created) jobIDs() []string {
	ids := make([]string, len(c.Jobs))
	for i, j := range c.Jobs {
		ids[i] = j.ID
	}
	return ids
}

func submit(api string, targets []map[string]any) (created, error) {
	body, _ := json.Marshal(map[string]any{"targets": targets, "labels": map[string]string{"source": "soak"}})
	resp, err := http.Post(api+"/v1/batches", "application/json", bytes.NewReader(body))
	if err != nil {
		return created{}, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var c created
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal(raw, &c) != nil || c.ID == "" {
		return created{}, fmt.Errorf("%d %s", resp.StatusCode, raw)
	}
	return c, nil
}

type batchState struct {
	Status string         `json:"status"`
	Counts map[string]int `json:"counts"`
}

func getBatch(api, id string) (batchState, error) {
	var b batchState
	resp, err := http.Get(api + "/v1/batches/" + id)
	if err != nil {
		return b, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return b, fmt.Errorf("GET batch %s: %s", id, resp.Status)
	}
	return b, json.NewDecoder(resp.Body).Decode(&b)
}

// waitBatches waits until every batch is completed, keeping done at the
// number of final jobs, and returns the job counts by status.
func waitBatches(api string, ids []string, done *atomic.Int64, timeout time.Duration) (map[string]int, error) {
	deadline := time.Now().Add(timeout)
	for {
		total := map[string]int{}
		complete := true
		for _, id := range ids {
			b, err := getBatch(api, id)
			if err != nil {
				return nil, err
			}
			complete = complete && b.Status == "completed"
			for k, v := range b.Counts {
				total[k] += v
			}
		}
		done.Store(int64(total["succeeded"] + total["failed"] + total["canceled"]))
		if complete {
			return total, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("pages not done after %s: %s", timeout, formatCounts(total))
		}
		time.Sleep(2 * time.Second)
	}
}

// waitIdle waits until no batch of the api is still running.
func waitIdle(api string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := http.Get(api + "/v1/batches?limit=100")
		if err != nil {
			return err
		}
		var l struct {
			Batches []batchState `json:"batches"`
		}
		err = json.NewDecoder(resp.Body).Decode(&l)
		resp.Body.Close()
		if err != nil {
			return err
		}
		idle := true
		for _, b := range l.Batches {
			idle = idle && b.Status == "completed"
		}
		if idle {
			return nil
		}
		time.Sleep(time.Second)
	}
	return errors.New("batches still running after " + timeout.String())
}

func formatCounts(c map[string]int) string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, c[k]))
	}
	return strings.Join(parts, ", ")
}
