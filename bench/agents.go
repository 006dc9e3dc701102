package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// -agents measures the synchronous door (docs/agents.md), in one run:
//
//	(1) POST /v1/capture of a short local page (one screenshot), and the same
//	    page through the Browserless-compatible /screenshot, against a bare
//	    go-rod capture of that page (bench/floor.go), interleaved call by call:
//	    "bench: agents: sync/floor p50 = R".
//	(2) the same sync calls while another API key's 1,000-page batch is queued
//	    and running: "bench: agents: loaded/idle p95 = R" (aim: at most 2).
//
// The stack reserves SNAPQ_INTERACTIVE_TABS=1 of -concurrency tabs for the
// interactive lane, as docs/agents.md suggests (a quarter).

type agentsOptions struct {
	on       bool
	calls    int
	batch    int
	variants string
	// otherHost puts the other key's batch on another site (loopback address) than the
	// sync calls, so the host's cap (host_concurrency) is not between them.
	otherHost bool
	// browserless is the base URL of a running Browserless (e.g. http://127.0.0.1:3000?token=T):
	// its /chromium/screenshot and /chromium/content join the idle series.
	browserless string
}

func (a *agentsOptions) flags() {
	flag.BoolVar(&a.on, "agents", false, "only measure synchronous capture latency: idle against a bare go-rod capture, and behind another key's batch (agents.go)")
	flag.IntVar(&a.calls, "agents-calls", 20, "synchronous calls per series")
	flag.IntVar(&a.batch, "agents-batch", 1000, "pages of the other key's batch")
	flag.StringVar(&a.browserless, "agents-browserless", "", "base URL of a running Browserless with its token (http://127.0.0.1:3000?token=T): its /chromium/screenshot and /chromium/content join the idle series, and a concurrency 1 and 4 series (latency, pages/s) compares its /chromium/screenshot with the sync and compat doors (docs/agents.md says how to run it here)")
	flag.BoolVar(&a.otherHost, "agents-batch-other-host", false, "serve the other key's batch from another loopback address than the sync calls' page (default: the same host, so the sync call also waits for a slot of the host's cap)")
	flag.StringVar(&a.variants, "agents-variants", "", `run the whole measurement once per variant, back to back, each a stack of its own with extra worker settings: "name:K=V,K=V;name2:…" (e.g. "shared:SNAPQ_INTERACTIVE_BROWSER_TABS=0,SNAPQ_INTERACTIVE_TABS=1,SNAPQ_BATCH_CHROME_NICE=0;own:")`)
}

// agentsVariant is one configuration the -agents bench measures.
type agentsVariant struct {
	name string
	env  []string
}

// parseVariants reads -agents-variants; empty: one variant with the defaults.
func parseVariants(s string) ([]agentsVariant, error) {
	if strings.TrimSpace(s) == "" {
		return []agentsVariant{{name: "defaults"}}, nil
	}
	var out []agentsVariant
	for _, part := range strings.Split(s, ";") {
		name, kvs, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok || name == "" {
			return nil, fmt.Errorf("-agents-variants: %q: want name:K=V,K=V", part)
		}
		v := agentsVariant{name: name}
		for _, kv := range strings.Split(kvs, ",") {
			if kv = strings.TrimSpace(kv); kv != "" {
				if !strings.HasPrefix(kv, "SNAPQ_") || !strings.Contains(kv, "=") {
					return nil, fmt.Errorf("-agents-variants: %q: want SNAPQ_NAME=value", kv)
				}
				v.env = append(v.env, kv)
			}
		}
		out = append(out, v)
	}
	return out, nil
}

// loadAvg is /proc/loadavg's first three fields.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// agentsResult is one variant's numbers, for the summary.
type agentsResult struct {
	name                              string
	floor50, sync50, sync95, compat50 time.Duration
	loaded50, loaded95                time.Duration
	late                              int
	loadStart, loadEnd                string
}

func agentsBench(o options) error {
	variants, err := parseVariants(o.agents.variants)
	if err != nil {
		return err
	}
	var results []agentsResult
	for i, v := range variants {
		vo := o
		vo.env = append(append([]string(nil), o.env...), v.env...)
		vo.suffix = "-agents-" + strconv.Itoa(i)
		fmt.Printf("bench: agents: variant %q (%s), load average %s\n", v.name, strings.Join(v.env, " "), loadAvg())
		r, err := agentsOne(vo)
		if err != nil {
			return fmt.Errorf("variant %s: %w", v.name, err)
		}
		r.name = v.name
		results = append(results, r)
	}
	fmt.Printf("bench: agents: summary (wall times inflated on a shared machine; ratios are within a variant's run)\n")
	for _, r := range results {
		fmt.Printf("bench: agents: %-10s sync/floor p50 %.2f (sync p50 %s, floor p50 %s), compat/floor p50 %.2f; idle p95 %s, loaded p50 %s p95 %s, loaded/idle p95 %.2f (%d not done); load %s → %s\n",
			r.name, ratio(r.sync50, r.floor50), r.sync50, r.floor50, ratio(r.compat50, r.floor50), r.sync95, r.loaded50, r.loaded95,
			ratio(r.loaded95, r.sync95), r.late, r.loadStart, r.loadEnd)
	}
	return nil
}

// agentsOne measures one variant on a stack of its own.
func agentsOne(o options) (agentsResult, error) {
	var r agentsResult
	ctx := context.Background()
	addrs := strings.Split(o.addrs, ",")[:1]
	if o.agents.otherHost {
		addrs = strings.Split(o.addrs, ",")[:2]
	}
	sites, stopSites, err := serveSites(addrs)
	if err != nil {
		return r, err
	}
	defer stopSites()
	o.allow = allowCIDRs(strings.Join(addrs, ","))
	batchSite := sites[len(sites)-1]
	o.env = append([]string{"SNAPQ_AUTH=on", "SNAPQ_INTERACTIVE_TABS=" + strconv.Itoa(max(1, o.concurrency/4))}, o.env...) // a variant's settings win
	st, err := startStack(ctx, o)
	if err != nil {
		return r, err
	}
	defer st.close()
	agent, err := st.key("agent")
	if err != nil {
		return r, err
	}
	other, err := st.key("batch")
	if err != nil {
		return r, err
	}
	floor, err := newFloor(ctx, o.chrome, 1)
	if err != nil {
		return r, err
	}
	defer floor.close()
	page := sites[0] + "/short"
	fmt.Printf("bench: agents: %s, %d calls per series, worker concurrency %d; wall times on a shared machine are inflated, the ratios are the result\n", page, o.agents.calls, o.concurrency)
	for i := range 3 { // warm both paths
		if _, err := floor.time(ctx, page+"?warm="+strconv.Itoa(i)); err != nil {
			return r, err
		}
		if _, err := st.syncCall(agent, "/v1/capture", page+"?warm="+strconv.Itoa(i)); err != nil {
			return r, err
		}
	}
	r.loadStart = loadAvg()
	if err := agentsIdle(ctx, st, floor, agent, page, o.agents.browserless, o.agents.calls, &r); err != nil {
		return r, err
	}
	if err := agentsPhases(st, agent, page, o.agents.calls, "idle"); err != nil {
		return r, err
	}
	if o.agents.browserless != "" {
		if err := agentsConcurrency(st, agent, page, o.agents.browserless, o.agents.calls); err != nil {
			return r, err
		}
	}
	err = agentsLoaded(st, agent, other, batchSite, page, o.agents, &r)
	r.loadEnd = loadAvg()
	return r, err
}

// agentsIdle runs the idle series, interleaved, prints them and keeps their percentiles in r.
func agentsIdle(ctx context.Context, st *stack, f *floor, key, page, peer string, n int, r *agentsResult) error {
	var fl, sy, bl []time.Duration
	for i := range n {
		u := page + "?i=" + strconv.Itoa(i)
		d, err := f.time(ctx, u)
		if err != nil {
			return err
		}
		fl = append(fl, d)
		if d, err = st.syncCall(key, "/v1/capture", u); err != nil {
			var nd errNotDone
			if !errors.As(err, &nd) {
				return err
			}
			fmt.Printf("bench: agents: an idle sync call was not done within wait_ms (counted at it)\n")
			d = time.Duration(nd)
		}
		sy = append(sy, d)
		if d, err = st.syncCall(key, "/compat/browserless/screenshot", u); err != nil {
			var nd errNotDone
			if !errors.As(err, &nd) {
				return err
			}
			fmt.Printf("bench: agents: a compat call was not done within its 30 s timeout (counted at it)\n")
			d = time.Duration(nd)
		}
		bl = append(bl, d)
	}
	series := []struct {
		name string
		ds   []time.Duration
	}{{"bare go-rod", fl}, {"POST /v1/capture", sy}, {"browserless /screenshot", bl}}
	if peer != "" {
		pshot, pcontent, err := peerSeries(peer, page, n)
		if err != nil {
			return err
		}
		series = append(series, struct {
			name string
			ds   []time.Duration
		}{"Browserless /screenshot", pshot}, struct {
			name string
			ds   []time.Duration
		}{"Browserless /content", pcontent})
		fmt.Printf("bench: agents: Browserless itself: sync/Browserless-screenshot p50 = %.2f, compat-screenshot/Browserless-screenshot p50 = %.2f\n",
			ratio(pctOf(sy, 50), pctOf(pshot, 50)), ratio(pctOf(bl, 50), pctOf(pshot, 50)))
	}
	for _, s := range series {
		fmt.Printf("bench: agents: idle %-24s p50 %6s  p95 %6s\n", s.name, pctOf(s.ds, 50), pctOf(s.ds, 95))
	}
	fmt.Printf("bench: agents: sync/floor p50 = %.2f (p95 %.2f); compat/floor p50 = %.2f\n",
		ratio(pctOf(sy, 50), pctOf(fl, 50)), ratio(pctOf(sy, 95), pctOf(fl, 95)), ratio(pctOf(bl, 50), pctOf(fl, 50)))
	r.floor50, r.sync50, r.sync95, r.compat50 = pctOf(fl, 50), pctOf(sy, 50), pctOf(sy, 95), pctOf(bl, 50)
	return nil
}

// agentsLoaded queues another key's batch and runs the sync series behind it.
func agentsLoaded(st *stack, agent, other, site, page string, a agentsOptions, r *agentsResult) error {
	urls := make([]string, a.batch)
	for i := range urls {
		urls[i] = site + "/short?batch=" + strconv.Itoa(i)
	}
	var b struct {
		ID string `json:"id"`
	}
	if code, raw, err := st.post(other, "/v1/batches", map[string]any{"urls": urls}, &b); err != nil || code != http.StatusAccepted {
		return fmt.Errorf("submit the other key's batch: %d %s %v", code, raw, err)
	}
	defer st.post(other, "/v1/batches/"+b.ID+"/cancel", nil, nil) //nolint:errcheck // best effort at the end
	var loaded []time.Duration
	var ids []string
	late := 0
	for i := range a.calls {
		d, id, err := st.syncCallJob(agent, "/v1/capture", page+"?loaded="+strconv.Itoa(i))
		ids = append(ids, id)
		var nd errNotDone
		if errors.As(err, &nd) { // counted at the wait: the series' p95 is then a lower bound
			late++
			d, err = time.Duration(nd), nil
		}
		if err != nil {
			return err
		}
		loaded = append(loaded, d)
	}
	if late > 0 {
		fmt.Printf("bench: agents: %d of %d loaded calls were not done within wait_ms (counted as their wait: see .data/bench/logs/worker.log)\n", late, a.calls)
	}
	slowCalls(st, agent, loaded, ids, 2*r.sync95)
	if err := agentsPhases(st, agent, page+"?loadedphase=1", a.calls, "loaded"); err != nil {
		return err
	}
	var cur struct {
		Counts map[string]int `json:"counts"`
	}
	st.get(other, "/v1/batches/"+b.ID, &cur)
	where := "the same host"
	if a.otherHost {
		where = "another host"
	}
	fmt.Printf("bench: agents: behind a %d-page batch of another key on %s (its counts at the end: %v)\n", a.batch, where, cur.Counts)
	r.loaded50, r.loaded95, r.late = pctOf(loaded, 50), pctOf(loaded, 95), late
	fmt.Printf("bench: agents: idle   POST /v1/capture p50 %6s  p95 %6s\n", r.sync50, r.sync95)
	fmt.Printf("bench: agents: loaded POST /v1/capture p50 %6s  p95 %6s  (in call order: %v)\n", r.loaded50, r.loaded95, roundAll(loaded))
	fmt.Printf("bench: agents: loaded/idle p95 = %.2f\n", ratio(r.loaded95, r.sync95))
	return nil
}

// agentsPhases says where an idle sync call's time goes: n calls answered
// with the job view, split by the job's own timestamps (Postgres's clock, the
// same machine's) and the capture's timings; medians.
func agentsPhases(st *stack, key, page string, n int, label string) error {
	var total, toStart, render, upload, toFinish, reply []time.Duration
	steps := map[string][]time.Duration{}
	for i := range n {
		body, _ := json.Marshal(map[string]any{"url": page + sep(page) + "phase=" + strconv.Itoa(i), "wait_ms": 120000,
			"options": map[string]any{"outputs": []string{"screenshot"}, "screenshot": map[string]any{"format": "png"}}})
		req, _ := http.NewRequest("POST", st.api+"/v1/capture", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		var j jobTimes
		err = json.NewDecoder(resp.Body).Decode(&j)
		resp.Body.Close()
		end := time.Now()
		if err != nil || j.StartedAt == nil || j.FinishedAt == nil {
			return fmt.Errorf("phases: status %d, job %s: %v", resp.StatusCode, j.Status, err)
		}
		ms := func(k string) time.Duration { return time.Duration(j.Result.Timings[k]) * time.Millisecond }
		total = append(total, end.Sub(start))
		toStart = append(toStart, j.StartedAt.Sub(j.CreatedAt))
		render = append(render, ms("total")-ms("upload"))
		upload = append(upload, ms("upload"))
		toFinish = append(toFinish, j.FinishedAt.Sub(*j.StartedAt))
		reply = append(reply, end.Sub(*j.FinishedAt))
		for _, k := range phaseSteps {
			steps[k] = append(steps[k], ms(k))
		}
	}
	fmt.Printf("bench: agents: %s phases (p50 of %d JSON calls): total %s = submit→started %s, started→finished %s (render %s, upload %s), finished→reply %s\n",
		label, n, pctOf(total, 50), pctOf(toStart, 50), pctOf(toFinish, 50), pctOf(render, 50), pctOf(upload, 50), pctOf(reply, 50))
	parts := make([]string, 0, len(phaseSteps))
	for _, k := range phaseSteps {
		parts = append(parts, fmt.Sprintf("%s %s/%s", k, pctOf(steps[k], 50), pctOf(steps[k], 95)))
	}
	fmt.Printf("bench: agents: %s render steps (p50/p95): %s\n", label, strings.Join(parts, ", "))
	return nil
}

// jobTimes is what the phases read of a job view: its status, timestamps and
// the capture's timings.
type jobTimes struct {
	Status     string     `json:"status"`
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Result     struct {
		Timings map[string]int64 `json:"timings_ms"`
	} `json:"result"`
}

// phaseSteps are the timings (result.timings_ms) the phases print: queue (created → the
// worker's handler: dispatch and dequeue), start (the host's slot and the start), then the capture's.
var phaseSteps = []string{"queue", "start", "slot", "tab", "navigate", "wait", "capture", "encode", "thumbnail", "upload"}

// sep is the separator before another query parameter of u.
func sep(u string) string {
	if strings.Contains(u, "?") {
		return "&"
	}
	return "?"
}

// errNotDone is a sync call answered 202 (not done within wait_ms) after this long.
type errNotDone time.Duration

func (e errNotDone) Error() string { return fmt.Sprintf("not done within %s", time.Duration(e)) }

// key creates an API key with the api binary.
func (s *stack) key(name string) (string, error) {
	cmd := exec.Command(filepath.Join(s.procs.BinDir, "api"), "keys", "create", "--name", name)
	cmd.Env = s.procs.Env
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// time captures one page on the bare go-rod floor.
func (f *floor) time(ctx context.Context, url string) (time.Duration, error) {
	start := time.Now()
	err := f.one(ctx, f.pages[0], url)
	return time.Since(start), err
}

// syncCall posts one screenshot capture of url to path (POST /v1/capture or
// the compat /screenshot) and returns its latency; anything but the image is an error.
func (s *stack) syncCall(key, path, url string) (time.Duration, error) {
	d, _, err := s.syncCallJob(key, path, url)
	return d, err
}

// syncCallJob is syncCall that also returns the job's id (X-Snapq-Job-Id).
func (s *stack) syncCallJob(key, path, url string) (time.Duration, string, error) {
	body := map[string]any{"url": url, "wait_ms": 120000}
	if strings.HasPrefix(path, "/compat/") {
		body = map[string]any{"url": url}
	}
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", s.api+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "image/png")
	req.Header.Set("Authorization", "Bearer "+key)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	d, id := time.Since(start), resp.Header.Get("X-Snapq-Job-Id")
	if resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusRequestTimeout { // 408: the compat door's
		return 0, id, errNotDone(d)
	}
	if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		return 0, id, fmt.Errorf("%s %s: status %d, %.200s", path, url, resp.StatusCode, b)
	}
	return d, id, nil
}

func (s *stack) post(key, path string, body, out any) (int, []byte, error) {
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", s.api+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		_ = json.Unmarshal(b, out)
	}
	return resp.StatusCode, b, nil
}

func (s *stack) get(key, path string, out any) {
	req, _ := http.NewRequest("GET", s.api+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_ = json.NewDecoder(resp.Body).Decode(out)
		resp.Body.Close()
	}
}

// pctOf is the p-th percentile (nearest rank) of ds.
func pctOf(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0
	}
	i := (p*len(s)+99)/100 - 1
	return s[max(0, min(i, len(s)-1))].Round(time.Millisecond)
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// peerSeries times n calls of a running Browserless's /chromium/screenshot and
// /chromium/content on the page, interleaved (after snapq's series: a
// Browserless call starts a browser of its own, which would weigh on snapq's).
func peerSeries(base, page string, n int) (shot, content []time.Duration, err error) {
	for i := range n {
		u := page + "?peer=" + strconv.Itoa(i)
		d, err := peerCall(base, "/chromium/screenshot", u)
		if err != nil {
			return nil, nil, err
		}
		shot = append(shot, d)
		if d, err = peerCall(base, "/chromium/content", u); err != nil {
			return nil, nil, err
		}
		content = append(content, d)
	}
	return shot, content, nil
}

// agentsConcurrency runs n calls at concurrency 1 and then 4 through each
// door — snapq's sync capture and compat screenshot, Browserless's own
// /chromium/screenshot — and prints latency p50/p95 and pages/s per door and
// the pages/s ratios snapq/Browserless (issue 28's side-by-side).
func agentsConcurrency(st *stack, key, page, peer string, n int) error {
	doors := []struct {
		name string
		call func(u string) (time.Duration, error)
	}{
		{"POST /v1/capture", func(u string) (time.Duration, error) { return st.syncCall(key, "/v1/capture", u) }},
		{"compat /screenshot", func(u string) (time.Duration, error) { return st.syncCall(key, "/compat/browserless/screenshot", u) }},
		{"Browserless /screenshot", func(u string) (time.Duration, error) { return peerCall(peer, "/chromium/screenshot", u) }},
	}
	for _, c := range []int{1, 4} {
		rates := make([]float64, len(doors))
		for i, d := range doors {
			ds, wall, err := concurrentCalls(n, c, func(j int) (time.Duration, error) {
				return d.call(fmt.Sprintf("%s?c%d=%d-%d", page, c, i, j))
			})
			if err != nil {
				return fmt.Errorf("%s at concurrency %d: %w", d.name, c, err)
			}
			rates[i] = float64(n) / wall.Seconds()
			fmt.Printf("bench: agents: concurrency %d %-24s p50 %6s  p95 %6s  %.2f pages/s\n", c, d.name, pctOf(ds, 50), pctOf(ds, 95), rates[i])
		}
		fmt.Printf("bench: agents: concurrency %d pages/s sync/Browserless = %.2f, compat/Browserless = %.2f\n",
			c, rates[0]/rates[2], rates[1]/rates[2])
	}
	return nil
}

// concurrentCalls runs call(0..n-1), c at a time, and returns each call's
// time and the wall time of all.
func concurrentCalls(n, c int, call func(j int) (time.Duration, error)) ([]time.Duration, time.Duration, error) {
	ds := make([]time.Duration, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range c {
		wg.Go(func() {
			for j := range next {
				ds[j], errs[j] = call(j)
			}
		})
	}
	for j := range n {
		next <- j
	}
	close(next)
	wg.Wait()
	return ds, time.Since(start), errors.Join(errs...)
}

// peerCall posts one page to a Browserless route (base carries ?token=).
func peerCall(base, route, page string) (time.Duration, error) {
	u, err := url.Parse(base)
	if err != nil {
		return 0, err
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + route
	raw, _ := json.Marshal(map[string]any{"url": page})
	start := time.Now()
	resp, err := http.Post(u.String(), "application/json", bytes.NewReader(raw))
	if err != nil {
		return 0, err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(b) == 0 {
		return 0, fmt.Errorf("Browserless %s: status %d, %.200s", route, resp.StatusCode, b)
	}
	return time.Since(start), nil
}

// roundAll rounds ds to milliseconds, for printing.
func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

// slowCalls prints where each call slower than bound spent its time, from
// its job's own timestamps and timings: the calls that make a loaded p95.
func slowCalls(st *stack, key string, ds []time.Duration, ids []string, bound time.Duration) {
	for i, d := range ds {
		if d <= bound || ids[i] == "" {
			continue
		}
		var j jobTimes
		st.get(key, "/v1/jobs/"+ids[i], &j)
		if j.StartedAt == nil || j.FinishedAt == nil {
			fmt.Printf("bench: agents: slow call %d (%s): job %s not started or finished\n", i, d.Round(time.Millisecond), ids[i])
			continue
		}
		parts := make([]string, 0, len(phaseSteps))
		for _, k := range phaseSteps {
			parts = append(parts, fmt.Sprintf("%s %d", k, j.Result.Timings[k]))
		}
		fmt.Printf("bench: agents: slow call %d (%s): created→started %s, started→finished %s; steps ms: %s\n", i,
			d.Round(time.Millisecond), j.StartedAt.Sub(j.CreatedAt).Round(time.Millisecond),
			j.FinishedAt.Sub(*j.StartedAt).Round(time.Millisecond), strings.Join(parts, ", "))
	}
}
