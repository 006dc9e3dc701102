package main

// The scale bench (-scale): the same corpus captured by 2 workers with 2 tabs each and
// by 1 worker with 4 tabs, on one api, Redis, Postgres and MinIO, interleaved over the
// rounds. It prints each setup's pages/s and the peak PSS of its workers and their
// Chromiums, and last "bench: scale: 2 workers x 2 tabs / 1 worker x 4 tabs = R".
// Scaling out costs a second Chromium (its browser and GPU processes) and a second
// worker; what it buys is independence: a crash or recycle takes half the tabs down.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// scaleSetup is one way to run 4 tabs.
type scaleSetup struct {
	name    string
	workers []string // process names (links to the worker binary)
	tabs    int      // SNAPQ_WORKER_CONCURRENCY of each
}

func scaleBench(ctx context.Context, o options, corpus []string) error {
	o.noWorker = true
	st, err := startStack(ctx, o)
	if err != nil {
		return err
	}
	defer st.close()
	if err := os.Symlink("worker", filepath.Join(st.procs.BinDir, "worker-b")); err != nil && !os.IsExist(err) {
		return err
	}
	setups := []scaleSetup{
		{name: "1 worker x 4 tabs", workers: []string{"worker"}, tabs: 4},
		{name: "2 workers x 2 tabs", workers: []string{"worker", "worker-b"}, tabs: 2},
	}
	total := make([]time.Duration, len(setups))
	peak := make([]float64, len(setups))
	for r := 1; r <= o.rounds; r++ {
		order := []int{0, 1}
		if r%2 == 0 {
			order = []int{1, 0}
		}
		for _, i := range order {
			s := setups[i]
			d, p, err := st.runSetup(s, corpus)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			total[i] += d
			peak[i] = max(peak[i], p)
			fmt.Printf("bench: scale round %d: %s %.2f pages/s, peak PSS %.0f MiB\n", r, s.name, pps(len(corpus), d), p)
		}
	}
	n := len(corpus) * o.rounds
	for i, s := range setups {
		fmt.Printf("bench: scale: %s: %.2f pages/s (%d pages in %.1fs), peak PSS of workers + Chromium %.0f MiB\n",
			s.name, pps(n, total[i]), n, total[i].Seconds(), peak[i])
	}
	fmt.Printf("bench: scale: 2 workers x 2 tabs / 1 worker x 4 tabs = %.2f\n", total[0].Seconds()/total[1].Seconds())
	return nil
}

// runSetup starts the setup's workers, warms them, captures the corpus as one batch and
// stops them. It returns the batch's wall time and the peak PSS of the workers' trees.
func (s *stack) runSetup(setup scaleSetup, corpus []string) (time.Duration, float64, error) {
	base := s.procs.Env
	s.procs.Env = append(append([]string(nil), base...), fmt.Sprintf("SNAPQ_WORKER_CONCURRENCY=%d", setup.tabs))
	defer func() { s.procs.Env = base }()
	for _, w := range setup.workers {
		if err := s.procs.Start(w); err != nil {
			return 0, 0, err
		}
	}
	defer func() {
		for _, w := range setup.workers {
			s.procs.Stop(w, syscall.SIGTERM) // idle workers exit at once
		}
	}()
	// Warm-up: every worker has its Chromium up and a tab open before the clock starts.
	warm := corpus[:min(4*len(setup.workers), len(corpus))]
	if _, _, err := s.runBatchPids(warm, nil); err != nil {
		return 0, 0, fmt.Errorf("warm-up: %w", err)
	}
	pids := make([]int, 0, len(setup.workers))
	for _, w := range setup.workers {
		pids = append(pids, s.procs.Pid(w))
	}
	return s.runBatchPids(corpus, pids)
}

// runBatchPids is runBatch sampling the PSS of several process trees (summed).
func (s *stack) runBatchPids(urls []string, pids []int) (time.Duration, float64, error) {
	stop := samplePeak(func() float64 {
		v := 0.0
		for _, pid := range pids {
			v += treePSSMiB(pid)
		}
		return v
	})
	d, err := s.runBatch(urls)
	peak := stop()
	if err != nil && strings.Contains(err.Error(), "worker.log") {
		err = fmt.Errorf("%w (and worker-b.log)", err)
	}
	return d, peak, err
}

// runScale serves the corpus and runs scaleBench.
func runScale(o options) error {
	sites, stopSites, err := serveSites(strings.Split(o.addrs, ","))
	if err != nil {
		return err
	}
	defer stopSites()
	corpus := buildCorpus(sites, o.pages)
	o.allow = allowCIDRs(o.addrs)
	fmt.Printf("bench: scale: corpus of %d pages on %d loopback sites, %d rounds\n", len(corpus), len(sites), o.rounds)
	return scaleBench(context.Background(), o, corpus)
}
