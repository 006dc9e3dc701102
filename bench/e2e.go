package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/snapq/snapq/internal/testenv"
)

// contender is one setup measured each round: the floor, snapq end to end,
// and with -base snapq built from another revision.
type contender struct {
	name   string
	run    func() (time.Duration, error)
	groups procGroups
	times  []time.Duration
	pss    [][2]float64 // per round: peak sum of renderer PSS, peak largest renderer (MiB)
}

// run measures the floor, e2e (and -base) over o.rounds interleaved rounds and
// prints per round pages/s and ratios, then the stage table, CPU per process,
// renderer PSS per tab and last "bench: e2e/floor = R" (the median of the
// rounds' ratios).
func run(o options) error {
	ctx := context.Background()
	sites, stopSites, err := serveSites(strings.Split(o.addrs, ","))
	if err != nil {
		return err
	}
	defer stopSites()
	corpus := buildCorpus(sites, o.pages)
	o.allow = allowCIDRs(o.addrs)
	fmt.Printf("bench: corpus of %d pages on %d loopback sites, concurrency %d, %d rounds\n", len(corpus), len(sites), o.concurrency, o.rounds)

	if o.outputs {
		if err := outputsBench(ctx, o.chrome, sites, o.concurrency); err != nil {
			return fmt.Errorf("outputs bench: %w", err)
		}
	}
	st, err := startMeasuredStack(ctx, o, "")
	if err != nil {
		return err
	}
	defer st.close()
	var base *stack
	if o.base != "" {
		if base, err = startBaseStack(ctx, o); err != nil {
			return err
		}
		defer base.close()
	}
	floor, err := newFloor(ctx, o.chrome, o.concurrency)
	if err != nil {
		return err
	}
	defer floor.close()
	floor.fullPage = true // issue 31's floor: one full-page PNG per URL

	var lb *lib
	if o.lib {
		if lb, err = newLib(ctx, o.chrome, o.concurrency); err != nil {
			return err
		}
		defer lb.close()
		if _, err := lb.run(ctx, corpus[:min(8, len(corpus))]); err != nil {
			return fmt.Errorf("lib warm-up: %w", err)
		}
	}
	// Warm every path once (browser caches of fonts, the worker's first tabs).
	warm := corpus[:min(8, len(corpus))]
	if _, err := floor.run(ctx, warm); err != nil {
		return fmt.Errorf("floor warm-up: %w", err)
	}
	for _, s := range []*stack{st, base} {
		if s == nil {
			continue
		}
		if _, err := s.runBatch(warm); err != nil {
			return fmt.Errorf("e2e warm-up: %w", err)
		}
	}

	stages := newStageTable(st.metrics)
	before, err := scrapeStages(st.metrics)
	if err != nil {
		return fmt.Errorf("worker metrics: %w", err)
	}
	cs := []*contender{
		{name: "floor", groups: floor.groups(), run: func() (time.Duration, error) { return floor.run(ctx, corpus) }},
		{name: "e2e", groups: st.groups, run: func() (time.Duration, error) {
			d, err := st.runBatch(corpus)
			if err == nil {
				err = stages.addBatch(st.api, st.batch)
			}
			return d, err
		}},
	}
	if o.bandFloor {
		bf, err := bandFloorContender(ctx, o, corpus)
		if err != nil {
			return err
		}
		defer bf.close()
		cs = append(cs, bf.contender)
	}
	if base != nil {
		cs = append(cs, &contender{name: "base", groups: base.groups, run: func() (time.Duration, error) {
			d, err := base.runBatch(corpus)
			return d, err
		}})
	}
	var cpu cpuTable
	for r := 1; r <= o.rounds; r++ {
		if err := runRound(cs, r, len(corpus), &cpu); err != nil {
			return err
		}
		if lb != nil {
			ld, err := lb.run(ctx, corpus)
			if err != nil {
				return err
			}
			fmt.Printf("bench: round %d: capture package alone %.2f pages/s, ratio to floor %.2f\n", r, pps(len(corpus), ld),
				cs[0].times[r-1].Seconds()/ld.Seconds())
		}
	}
	after, err := scrapeStages(st.metrics)
	if err != nil {
		return fmt.Errorf("worker metrics: %w", err)
	}
	stages.hist = histDelta(before, after)
	stages.print()
	cpu.print()
	for _, c := range cs[2:] {
		if c.name == "bandfloor" {
			fmt.Printf("bench: e2e/bandfloor = %.2f (median of %d rounds: against snapq's own band capture in the bare loop, a harder floor than issue 31's)\n",
				medianRatio(c.times, cs[1].times), len(c.times))
		}
	}
	summary(cs, len(corpus), o)
	return nil
}

// runRound runs every contender once, in an order rotated by the round, and
// prints each one's pages/s and its ratio to the floor's.
func runRound(cs []*contender, r, pages int, cpu *cpuTable) error {
	parts := []string{}
	for i := range cs {
		c := cs[(i+r-1)%len(cs)]
		g := startGroupCPU(c.groups)
		stopPSS := rendererPSS(c.groups)
		m0 := readMachineCPU()
		d, err := c.run()
		cpu.addMachine(c.name, readMachineCPU().sub(m0), d)
		sum, big := stopPSS()
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		cpu.add(c.name, g.stop(), pages)
		c.times = append(c.times, d)
		c.pss = append(c.pss, [2]float64{sum, big})
		parts = append(parts, fmt.Sprintf("%s %.2f pages/s", c.name, pps(pages, d)))
	}
	ratios := []string{}
	for _, c := range cs[1:] {
		ratios = append(ratios, fmt.Sprintf("%s/floor %.2f", c.name, cs[0].times[r-1].Seconds()/c.times[r-1].Seconds()))
	}
	fmt.Printf("bench: round %d: %s; %s\n", r, strings.Join(parts, ", "), strings.Join(ratios, ", "))
	return nil
}

// summary prints the totals, the renderers' PSS per tab and the median ratios.
func summary(cs []*contender, pages int, o options) {
	floor := cs[0]
	for _, c := range cs {
		var total time.Duration
		peakSum, peakBig := 0.0, 0.0
		for i, d := range c.times {
			total += d
			peakSum, peakBig = max(peakSum, c.pss[i][0]), max(peakBig, c.pss[i][1])
		}
		n := pages * len(c.times)
		fmt.Printf("bench: %-5s %.2f pages/s (%d pages in %.1fs); Chromium renderers' peak PSS %.0f MiB, %.0f MiB per tab (%d tabs), largest renderer %.0f MiB\n",
			c.name, pps(n, total), n, total.Seconds(), peakSum, peakSum/float64(o.concurrency), o.concurrency, peakBig)
	}
	for _, c := range cs[2:] {
		if c.name != "base" {
			continue
		}
		fmt.Printf("bench: e2e/%s = %.2f (median of %d rounds: this tree against -base %s)\n", c.name,
			medianRatio(c.times, cs[1].times), len(c.times), o.base)
	}
	for _, c := range cs[2:] {
		fmt.Printf("bench: %s/floor = %.2f (median of %d rounds)\n", c.name, medianRatio(floor.times, c.times), len(c.times))
	}
	fmt.Printf("bench: %s/floor = %.2f (median of %d rounds)\n", cs[1].name, medianRatio(floor.times, cs[1].times), len(cs[1].times))
}

// medianRatio is the median over rounds of num[i]/den[i] (durations: the
// pages/s ratio of den's setup to num's).
func medianRatio(num, den []time.Duration) float64 {
	rs := make([]float64, len(num))
	for i := range num {
		rs[i] = num[i].Seconds() / den[i].Seconds()
	}
	sort.Float64s(rs)
	if len(rs)%2 == 1 {
		return rs[len(rs)/2]
	}
	return (rs[len(rs)/2-1] + rs[len(rs)/2]) / 2
}

// startMeasuredStack is startStack with the worker's metrics served and its
// Chromium marked by a TMPDIR of its own, so its processes can be found.
func startMeasuredStack(ctx context.Context, o options, suffix string) (*stack, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	tmp := filepath.Join(cwd, ".data", "bench", "tmp"+suffix+"-"+testenv.RandomSuffix(4))
	if err := os.MkdirAll(tmp, 0o777); err != nil {
		return nil, err
	}
	_ = os.Chmod(tmp, 0o1777) // the sandboxed browser user writes its profile here
	port, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	o.suffix = suffix
	o.env = append(append([]string(nil), o.env...), "TMPDIR="+tmp, "SNAPQ_METRICS_ADDR=127.0.0.1:"+port)
	st, err := startStack(ctx, o)
	if err != nil {
		return nil, err
	}
	st.metrics = "http://127.0.0.1:" + port + "/metrics"
	st.groups = procGroups{roots: map[int]string{st.procs.Pid("api"): "api", st.procs.Pid("worker"): "worker"},
		marker: []byte("TMPDIR=" + tmp + "\x00")}
	return st, nil
}

// startBaseStack builds api and worker from -base (git archive of that
// revision) and starts them as a second stack.
func startBaseStack(ctx context.Context, o options) (*stack, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	src := filepath.Join(cwd, ".data", "bench", "src-base")
	if err := os.RemoveAll(src); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		return nil, err
	}
	sh := fmt.Sprintf("git archive --format=tar %q | tar -x -C %q", o.base, src)
	cmd := exec.Command("bash", "-o", "pipefail", "-c", sh)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("-base %s: %w", o.base, err)
	}
	o.root = src
	return startMeasuredStack(ctx, o, "-base")
}

// bandFloor is the -bandfloor contender and the floor behind it.
type bandFloor struct {
	*floor
	contender *contender
}

// bandFloorContender starts the band floor (the bare loop capturing with
// snapq's own segmented code, capture.Shoot) and warms it on the corpus's
// first pages.
func bandFloorContender(ctx context.Context, o options, corpus []string) (*bandFloor, error) {
	f, err := newFloor(ctx, o.chrome, o.concurrency)
	if err != nil {
		return nil, err
	}
	if _, err := f.run(ctx, corpus[:min(8, len(corpus))]); err != nil {
		f.close()
		return nil, fmt.Errorf("bandfloor warm-up: %w", err)
	}
	return &bandFloor{floor: f, contender: &contender{name: "bandfloor", groups: f.groups(),
		run: func() (time.Duration, error) { return f.run(ctx, corpus) }}}, nil
}
