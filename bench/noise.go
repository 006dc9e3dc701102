package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// The noise benchmark (-noise, make noise): how often a suite of live pages
// fails with no real change, before and after learning, and whether real
// changes still fail it — with snapq's quieting features off, then on, in
// one invocation on one stack.
//
// Two suites watch the same -noise-pages pages of the fixture site
// (noisesite.go). "off" has the defaults. "on" turns on block.ads,
// trackers, chat_widgets, social and cookie_banners, has the dynamic_text
// rules a user would write for the relative timestamps and the visitor
// counter and the ignore selector for the delayed newsletter modal (no list
// knows a first-party modal), and learns volatility: -noise-learn=accept (the default) reads
// GET /v1/suites/:id/volatility after the learning runs and creates the
// suggested rules (POST /v1/suites/:id/rules; one suite-wide rule for a
// selector volatile on several pages, as accepting them on a templated site
// amounts to); -noise-learn=mask sets volatility {mode: mask} on the suite
// instead (the API must know it); -noise-learn=none learns nothing.
//
// After one baseline run each (approved), the two suites run alternately
// -noise-runs times with no real change, then -noise-changes times with one
// real change injected into a random page (text, colour, layout shift,
// removed element; the same for both suites). The two suites' runs of a
// round run at the same time, so both see the same moment of the site. Printed per suite: the
// false-alarm rate (runs not passed) over the first 5 runs and over the
// runs after learning (21–30 at full size), and the share of injected
// changes whose page failed.

type noiseOptions struct {
	on        bool
	pages     int
	runs      int
	changes   int
	learn     string
	addrs     string
	minRuns   int
	threshold float64
}

func (n *noiseOptions) flags() {
	flag.BoolVar(&n.on, "noise", false, "only run the noise benchmark (noise.go): false alarms and detection, features off then on")
	flag.IntVar(&n.pages, "noise-pages", 20, "-noise: pages of the fixture site in each suite")
	flag.IntVar(&n.runs, "noise-runs", 30, "-noise: runs with no real change (the learning runs are the first two thirds)")
	flag.IntVar(&n.changes, "noise-changes", 10, "-noise: runs with one real change injected")
	flag.StringVar(&n.learn, "noise-learn", "accept", "-noise: how the 'on' suite learns volatility: accept (suggestions → rules), mask (volatility {mode: mask}), none")
	flag.StringVar(&n.addrs, "noise-addrs", "127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5,127.0.0.6", "-noise: loopback addresses of the site, ad, tracker, widget and font hosts")
	flag.IntVar(&n.minRuns, "noise-min-runs", 5, "-noise: volatility's min_runs (at most the learning runs)")
	flag.Float64Var(&n.threshold, "noise-threshold", 0.3, "-noise: volatility's threshold (share of runs a region changed in)")
}

// noiseMode is one suite's tally.
type noiseMode struct {
	name     string
	suite    string
	alarms   []bool // per no-change run: not passed
	failed   []int  // per no-change run: its pages that did not pass
	detected int
	injected int
	blocking map[string][2]int // per category: requests, elements (one run's sum)
}

// noiseResult is what runNoise measured.
type noiseResult struct {
	modes          [2]*noiseMode // off, on
	learnAfter     int
	load0, load1   string
	elapsed        time.Duration
	rulesAccepted  int
	firstN, afterN int
}

// errNoStack is runNoise's error when the stack does not start.
var errNoStack = errors.New("the stack did not start")

func noiseBench(o options) error {
	res, err := runNoise(context.Background(), o)
	if err != nil {
		return err
	}
	res.print(os.Stdout, o.noise)
	return nil
}

// runNoise starts the fixture and one stack and runs both suites.
func runNoise(ctx context.Context, o options) (*noiseResult, error) {
	n := o.noise
	if n.pages < 1 || n.runs < 2 || n.changes < 0 || !slices.Contains([]string{"accept", "mask", "none"}, n.learn) {
		return nil, errors.New("-noise: want -noise-pages ≥ 1, -noise-runs ≥ 2, -noise-learn accept|mask|none")
	}
	site, err := serveNoiseSite(strings.Split(n.addrs, ","))
	if err != nil {
		return nil, err
	}
	defer site.close()
	o.allow = allowCIDRs(n.addrs)
	res := &noiseResult{load0: loadAvg(), learnAfter: max(1, n.runs*2/3)}
	res.firstN, res.afterN = min(5, res.learnAfter), n.runs-res.learnAfter
	start := time.Now()
	st, err := startStack(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNoStack, err)
	}
	defer st.close()
	api := noiseAPI{base: st.api}
	for i, on := range []bool{false, true} {
		m := &noiseMode{name: map[bool]string{false: "off", true: "on"}[on], blocking: map[string][2]int{}}
		if m.suite, err = api.createSuite(site, n, on); err != nil {
			return nil, err
		}
		res.modes[i] = m
	}
	fmt.Printf("noise: %d pages, %d runs with no change (learning from the first %d), %d with one; learn=%s; load average %s\n",
		n.pages, n.runs, res.learnAfter, n.changes, n.learn, res.load0)
	for _, m := range res.modes { // the baselines
		run, err := api.run(m.suite)
		if err != nil {
			return nil, fmt.Errorf("%s baseline run: %w", m.name, err)
		}
		if err := api.do("POST", "/v1/runs/"+run.ID+"/approve?comparisons=false", map[string]any{"all": true}, nil); err != nil {
			return nil, fmt.Errorf("%s approve: %w", m.name, err)
		}
	}
	if err := res.loop(ctx, api, site, n); err != nil {
		return nil, err
	}
	res.elapsed, res.load1 = time.Since(start), loadAvg()
	return res, nil
}

// loop runs both suites alternately, no-change runs then injected ones.
func (res *noiseResult) loop(ctx context.Context, api noiseAPI, site *noiseSite, n noiseOptions) error {
	for r := 1; r <= n.runs+n.changes; r++ {
		page, kind := 0, ""
		if r > n.runs {
			page, kind = 1+rand.IntN(n.pages), noiseChangeKinds[rand.IntN(len(noiseChangeKinds))]
			site.inject(page, kind)
		}
		var line []string
		runs, errs := [2]noiseRun{}, [2]error{}
		var wg sync.WaitGroup
		for i, m := range res.modes { // both suites at once: the worker stays busy
			wg.Go(func() { runs[i], errs[i] = api.run(m.suite) })
		}
		wg.Wait()
		for i, m := range res.modes {
			run, err := runs[i], errs[i]
			if err != nil {
				return fmt.Errorf("%s run %d: %w", m.name, r, err)
			}
			explain := api // after learning, say why the on suite still fails
			explain.why = m.name == "on" && r > res.learnAfter && page == 0
			failed, err := explain.failedTargets(run.ID)
			if err != nil {
				return err
			}
			if r == 1 && m.name == "on" {
				m.blocking, _ = api.blocking(run.BatchID)
			}
			if page == 0 {
				m.alarms = append(m.alarms, run.Status != "passed")
				m.failed = append(m.failed, len(failed))
				line = append(line, fmt.Sprintf("%s %s %v", m.name, run.Status, failed))
				continue
			}
			m.injected++
			hit := slices.Contains(failed, fmt.Sprintf("p%02d", page))
			if hit {
				m.detected++
			}
			line = append(line, fmt.Sprintf("%s %s, p%02d detected %v", m.name, run.Status, page, hit))
		}
		site.clear()
		fmt.Printf("noise: run %d%s: %s\n", r, map[bool]string{true: " (" + kind + ")", false: ""}[kind != ""], strings.Join(line, "; "))
		if r == res.learnAfter && n.learn == "accept" {
			k, err := api.acceptVolatility(res.modes[1].suite, res.learnAfter, n)
			if err != nil {
				return err
			}
			res.rulesAccepted = k
			fmt.Printf("noise: after run %d: accepted %d rules from the volatility suggestions\n", r, k)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// failedPages is how many pages failed over runs [from, to] (1-based).
func (m *noiseMode) failedPages(from, to int) int {
	k := 0
	for _, n := range m.failed[from-1 : to] {
		k += n
	}
	return k
}

// rate is the share of alarms among runs [from, to] (1-based).
func (m *noiseMode) rate(from, to int) (int, int) {
	k := 0
	for _, a := range m.alarms[from-1 : to] {
		if a {
			k++
		}
	}
	return k, to - from + 1
}

func (res *noiseResult) print(w io.Writer, n noiseOptions) {
	for _, m := range res.modes {
		k1, n1 := m.rate(1, res.firstN)
		k2, n2 := m.rate(res.learnAfter+1, len(m.alarms))
		ka, na := m.rate(1, len(m.alarms))
		fmt.Fprintf(w, "noise: %-3s false alarms runs 1–%d: %d/%d (%.0f%%); runs %d–%d (after learning): %d/%d (%.0f%%); all: %d/%d (%.0f%%); detected %d/%d injected changes (%.0f%%)\n",
			m.name, res.firstN, k1, n1, share(k1, n1), res.learnAfter+1, len(m.alarms), k2, n2, share(k2, n2),
			ka, na, share(ka, na), m.detected, m.injected, share(m.detected, m.injected))
	}
	var cats []string
	for c, v := range res.modes[1].blocking {
		cats = append(cats, fmt.Sprintf("%s %d requests/%d elements", c, v[0], v[1]))
	}
	slices.Sort(cats)
	fmt.Fprintf(w, "noise: on: blocked in run 1 (all pages): %s; learn=%s, %d rules accepted\n", strings.Join(cats, ", "), n.learn, res.rulesAccepted)
	fmt.Fprintf(w, "noise: %.0fs; load average before %s, after %s\n", res.elapsed.Seconds(), res.load0, res.load1)
}

func share(k, n int) float64 {
	if n == 0 {
		return 0
	}
	return 100 * float64(k) / float64(n)
}

// noiseAPI is the few calls of snapq's API the benchmark makes.
// why prints, for each failed comparison it lists, the changes that failed it.
type noiseAPI struct {
	base string
	why  bool
}

func (a noiseAPI) do(method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// createSuite creates the off or on suite over the first n.pages pages.
func (a noiseAPI) createSuite(site *noiseSite, n noiseOptions, on bool) (string, error) {
	var targets []map[string]any
	for p := 1; p <= n.pages; p++ {
		targets = append(targets, map[string]any{"url": site.url(p), "name": fmt.Sprintf("p%02d", p)})
	}
	body := map[string]any{"name": "noise-" + map[bool]string{false: "off", true: "on"}[on], "targets": targets,
		"options": map[string]any{"viewport": map[string]int{"width": 1280, "height": 720}}}
	if on {
		body["options"].(map[string]any)["block"] = map[string]bool{"ads": true, "trackers": true, "chat_widgets": true, "social": true, "cookie_banners": true}
		// No list hides a first-party newsletter modal and it comes and goes
		// (added/removed is not volatility): a user masks it by hand.
		body["ignore"] = map[string]any{"selectors": []string{"#newsletter-modal"}}
		if n.learn == "mask" {
			body["volatility"] = map[string]any{"mode": "mask", "min_runs": n.minRuns, "threshold": n.threshold}
		}
	}
	var s struct {
		ID string `json:"id"`
	}
	if err := a.do("POST", "/v1/suites", body, &s); err != nil {
		return "", err
	}
	if on { // what a user writes for relative times and a live counter
		for _, r := range []map[string]string{
			{"kind": "dynamic_text", "selector": ".reltime", "pattern": `\d+ (seconds?|minutes?) ago`},
			{"kind": "dynamic_text", "selector": ".visitors", "pattern": `[\d,]+`},
		} {
			if err := a.do("POST", "/v1/suites/"+s.ID+"/rules", r, nil); err != nil {
				return "", err
			}
		}
	}
	return s.ID, nil
}

type noiseRun struct {
	ID      string `json:"id"`
	BatchID string `json:"batch_id"`
	Status  string `json:"status"`
}

// run starts a run of suite and waits until it is final.
func (a noiseAPI) run(suite string) (noiseRun, error) {
	var r noiseRun
	if err := a.do("POST", "/v1/suites/"+suite+"/runs", nil, &r); err != nil {
		return r, err
	}
	deadline := time.Now().Add(20 * time.Minute)
	for r.Status == "" || r.Status == "running" {
		if time.Now().After(deadline) {
			return r, fmt.Errorf("run %s not final after 20 minutes", r.ID)
		}
		time.Sleep(250 * time.Millisecond)
		if err := a.do("GET", "/v1/runs/"+r.ID+"?comparisons=false", nil, &r); err != nil {
			return r, err
		}
	}
	return r, nil
}

// failedTargets names the targets of a run that did not pass.
func (a noiseAPI) failedTargets(run string) ([]string, error) {
	var page struct {
		Comparisons []struct {
			ID     string `json:"id"`
			Target string `json:"target"`
		} `json:"comparisons"`
	}
	if err := a.do("GET", "/v1/runs/"+run+"/comparisons?status=failed,new,missing,error&limit=1000", nil, &page); err != nil {
		return nil, err
	}
	var out []string
	for _, c := range page.Comparisons {
		if !slices.Contains(out, c.Target) {
			out = append(out, c.Target)
		}
		if a.why {
			fmt.Printf("noise:   %s: %s\n", c.Target, a.changes(c.ID))
		}
	}
	slices.Sort(out)
	return out, nil
}

// changes is what failed a comparison, for the log: its unsuppressed
// changes' kinds and selectors (the first six).
func (a noiseAPI) changes(comparison string) string {
	var cs struct {
		Changes []struct {
			Kind         string `json:"kind"`
			Selector     string `json:"selector"`
			SuppressedBy string `json:"suppressed_by"`
		} `json:"changes"`
	}
	if err := a.do("GET", "/v1/comparisons/"+comparison+"/changes", nil, &cs); err != nil {
		return err.Error()
	}
	var out []string
	for _, c := range cs.Changes {
		if c.SuppressedBy == "" && len(out) < 6 {
			out = append(out, c.Kind+" "+c.Selector)
		}
	}
	if len(out) == 0 {
		return "no unsuppressed change explained"
	}
	return strings.Join(out, "; ")
}

// blocking sums result.blocking over a batch's jobs, per category.
func (a noiseAPI) blocking(batch string) (map[string][2]int, error) {
	var list struct {
		Jobs []struct {
			Result *struct {
				Blocking *struct {
					Requests map[string]int `json:"requests"`
					Elements map[string]int `json:"elements"`
				} `json:"blocking"`
			} `json:"result"`
		} `json:"jobs"`
	}
	if err := a.do("GET", "/v1/batches/"+batch+"/jobs?limit=1000", nil, &list); err != nil {
		return nil, err
	}
	out := map[string][2]int{}
	for _, j := range list.Jobs {
		if j.Result == nil || j.Result.Blocking == nil {
			continue
		}
		for c, v := range j.Result.Blocking.Requests {
			out[c] = [2]int{out[c][0] + v, out[c][1]}
		}
		for c, v := range j.Result.Blocking.Elements {
			out[c] = [2]int{out[c][0], out[c][1] + v}
		}
	}
	return out, nil
}

// acceptVolatility creates the rules volatility suggests from the last runs
// runs: a selector volatile on several targets gets one suite-wide rule,
// one volatile on a single target a rule for that target. It answers how
// many rules it created.
func (a noiseAPI) acceptVolatility(suite string, runs int, n noiseOptions) (int, error) {
	var v struct {
		Regions []struct {
			Target   string `json:"target"`
			Selector string `json:"selector"`
			Volatile bool   `json:"volatile"`
		} `json:"regions"`
		Suggestions []struct {
			Rule map[string]any `json:"rule"`
		} `json:"suggestions"`
	}
	q := fmt.Sprintf("?runs=%d&min_runs=%d&threshold=%g", runs, min(n.minRuns, runs), n.threshold)
	if err := a.do("GET", "/v1/suites/"+suite+"/volatility"+q, nil, &v); err != nil {
		return 0, err
	}
	targets := map[string][]string{} // selector → targets where it is volatile
	for _, r := range v.Regions {
		if r.Volatile && !slices.Contains(targets[r.Selector], r.Target) {
			targets[r.Selector] = append(targets[r.Selector], r.Target)
		}
	}
	for _, s := range v.Suggestions { // suggested, though not in the regions listed
		sel, _ := s.Rule["selector"].(string)
		t, _ := s.Rule["target"].(string)
		if sel != "" && !slices.Contains(targets[sel], t) {
			targets[sel] = append(targets[sel], t)
		}
	}
	k := 0
	for sel, ts := range targets {
		rules := []map[string]string{{"kind": "ignore_element", "selector": sel}}
		if len(ts) == 1 {
			rules[0]["target"] = ts[0]
		}
		for _, r := range rules {
			if err := a.do("POST", "/v1/suites/"+suite+"/rules", r, nil); err != nil {
				return k, err
			}
			fmt.Printf("noise: rule ignore_element %q on %v\n", sel, ts)
			k++
		}
	}
	return k, nil
}
