package main

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/internal/fixtures"
)

// sandboxBench measures what Chromium's isolation costs, on the capture package alone
// (clean slate per job, no queue or storage), in one run: the default launch (sandbox on,
// site isolation off) against site isolation on, and against the sandbox off. The corpus
// is the usual mix plus pages that embed three cross-site frames, which is where site
// isolation adds processes. Each round starts each configuration's browser afresh (in a
// rotating order), warms it, and measures pages/s and the peak PSS of its processes.
func sandboxBench(o options) error {
	ctx := context.Background()
	sites, stopSites, err := serveSites(strings.Split(o.addrs, ","))
	if err != nil {
		return err
	}
	defer stopSites()
	if len(sites) < 2 {
		return fmt.Errorf("-sandbox needs at least two -addrs (cross-site frames)")
	}
	corpus := buildCorpus(sites, o.pages)
	for i := range corpus {
		if i%3 == 2 {
			corpus[i] = sites[i%len(sites)] + "/frames?i=" + strconv.Itoa(i)
		}
	}
	configs := []struct {
		name   string
		config func(*capture.Config)
	}{
		{"default (sandbox, no site isolation)", func(*capture.Config) {}},
		{"site isolation", func(c *capture.Config) { c.SiteIsolation = true }},
		{"no sandbox", func(c *capture.Config) { c.NoSandbox = true }},
	}
	fmt.Printf("bench: sandbox: %d pages (a third with 3 cross-site frames) on %d loopback sites, concurrency %d, %d rounds, as uid %d\n",
		len(corpus), len(sites), o.concurrency, o.rounds, os.Geteuid())
	total := make([]time.Duration, len(configs))
	peak := make([]float64, len(configs))
	fails := make([]int, len(configs))
	for r := range o.rounds {
		line := fmt.Sprintf("bench: sandbox round %d:", r+1)
		for k := range configs {
			i := (k + r) % len(configs)
			cfg := capture.DefaultConfig()
			cfg.ChromeBin, cfg.Tabs = o.chrome, o.concurrency
			// The machine may be loaded far beyond its cores: calls get a generous bound, so
			// the bench measures slowness instead of failing on a timeout.
			cfg.CallTimeout = 3 * time.Minute
			configs[i].config(&cfg)
			d, p, failed, err := sandboxRun(ctx, cfg, corpus)
			if err != nil {
				return fmt.Errorf("%s: %w", configs[i].name, err)
			}
			total[i] += d
			peak[i] = max(peak[i], p)
			fails[i] += failed
			line += fmt.Sprintf(" %s %.2f pages/s %.0f MiB;", configs[i].name, pps(len(corpus), d), p)
			if failed > 0 {
				line += fmt.Sprintf(" (%d failed)", failed)
			}
		}
		fmt.Println(line)
	}
	n := len(corpus) * o.rounds
	for i, c := range configs {
		fmt.Printf("bench: sandbox: %-38s %.2f pages/s, peak PSS %.0f MiB, %d of %d pages failed\n", c.name, pps(n, total[i]), peak[i], fails[i], n)
	}
	// on / off: pages/s with the feature on divided by pages/s with it off.
	fmt.Printf("bench: site-isolation: on / off = %.2f (peak PSS %.0f / %.0f MiB)\n", total[0].Seconds()/total[1].Seconds(), peak[1], peak[0])
	fmt.Printf("bench: sandbox: on / off = %.2f (peak PSS %.0f / %.0f MiB)\n", total[2].Seconds()/total[0].Seconds(), peak[0], peak[2])
	return nil
}

// sandboxRun starts a browser with cfg, warms it on a few pages, captures urls and returns
// the wall time, the peak PSS of the browser's processes while it did, and how many
// captures failed (they are printed, and count in the time).
func sandboxRun(ctx context.Context, cfg capture.Config, urls []string) (time.Duration, float64, int, error) {
	b, err := capture.New(ctx, cfg)
	if err != nil {
		return 0, 0, 0, err
	}
	defer b.Close()
	run := func(urls []string) (time.Duration, int) {
		work := make(chan string)
		var mu sync.Mutex
		failed := 0
		var wg sync.WaitGroup
		start := time.Now()
		for range cfg.Tabs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for u := range work {
					cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
					_, err := b.Capture(cctx, capture.Request{URL: u, Name: "sandbox"})
					cancel()
					if err != nil {
						fmt.Fprintf(os.Stderr, "bench: sandbox: %s: %v\n", u, err)
						mu.Lock()
						failed++
						mu.Unlock()
					}
				}
			}()
		}
		for _, u := range urls {
			work <- u
		}
		close(work)
		wg.Wait()
		return time.Since(start), failed
	}
	run(urls[:min(6, len(urls))]) // warm-up
	stop := childrenPSS()
	d, failed := run(urls)
	return d, stop(), failed, nil
}

// childrenPSS samples, every second until the returned function is called, the PSS of
// this process's descendants (the one browser running) and returns the peak in MiB.
func childrenPSS() func() float64 {
	self := os.Getpid()
	return samplePeak(func() float64 { return treePSSMiB(self) - pssKiB(self)/1024 })
}

// withFrames adds /frames?i=N to the fixture site: a short page embedding three articles
// from the other sites (cross-site frames).
func withFrames(sites *[]string, self string) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", fixtures.Handler())
	mux.HandleFunc("/frames", func(w http.ResponseWriter, r *http.Request) {
		i, _ := strconv.Atoi(r.URL.Query().Get("i"))
		var b strings.Builder
		b.WriteString(`<!doctype html><html><head><title>Frames</title></head><body><h1>Cross-site frames</h1>`)
		n := 0
		for k, s := range *sites {
			if s == self || n == 3 {
				continue
			}
			fmt.Fprintf(&b, `<iframe width="600" height="300" src="%s"></iframe>`,
				html.EscapeString(s+"/article?n="+strconv.Itoa(5+(i+k)%10)))
			n++
		}
		b.WriteString(`</body></html>`)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(b.String()))
	})
	return mux
}
