package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/snapq/snapq/capture"
)

// outputsBench measures, on the capture package with its clean slate, one
// page load producing four outputs against one load per output, on the same
// article pages in the same run, for two sets of outputs: the content outputs
// (what Firecrawl users ask for) and a set with the segmented screenshot,
// whose cost per load is about three loads' worth. It also measures Markdown
// pages/s.
func outputsBench(ctx context.Context, chrome string, sites []string, tabs int) error {
	l, err := newLib(ctx, chrome, tabs)
	if err != nil {
		return err
	}
	defer l.close()
	var urls []string
	for i := range 40 {
		urls = append(urls, sites[i%len(sites)]+"/article?n="+strconv.Itoa(20+i%20))
	}
	sets := []struct {
		name    string
		outputs []string
	}{
		{"html, markdown, text, links", []string{capture.OutputHTML, capture.OutputMarkdown, capture.OutputText, capture.OutputLinks}},
		{"screenshot, html, markdown, text", []string{capture.OutputScreenshot, capture.OutputHTML, capture.OutputMarkdown, capture.OutputText}},
	}
	var md time.Duration
	mdRuns := 0
	for _, set := range sets {
		four := set.outputs
		oneLoad := func() (time.Duration, error) {
			return l.runRequests(ctx, urls, func(u string) []capture.Request {
				return []capture.Request{{URL: u, Name: "p", Outputs: four}}
			})
		}
		perOutput := func() (time.Duration, error) {
			return l.runRequests(ctx, urls, func(u string) []capture.Request {
				reqs := make([]capture.Request, len(four))
				for i, o := range four {
					reqs[i] = capture.Request{URL: u, Name: "p", Outputs: []string{o}}
				}
				return reqs
			})
		}
		if _, err := oneLoad(); err != nil { // warm-up
			return err
		}
		var one, per time.Duration
		for r := range 2 {
			steps := []func() (time.Duration, error){oneLoad, perOutput}
			if r%2 == 1 {
				steps[0], steps[1] = steps[1], steps[0]
			}
			for i, step := range steps {
				d, err := step()
				if err != nil {
					return err
				}
				if (i == 0) == (r%2 == 0) {
					one += d
				} else {
					per += d
				}
			}
			d, err := l.runRequests(ctx, urls, func(u string) []capture.Request {
				return []capture.Request{{URL: u, Name: "p", Outputs: []string{capture.OutputMarkdown}}}
			})
			if err != nil {
				return err
			}
			md += d
			mdRuns++
		}
		fmt.Printf("bench: outputs [%s]: one load %.1fs, one load per output %.1fs: one/four loads = %.2f\n",
			set.name, one.Seconds(), per.Seconds(), one.Seconds()/per.Seconds())
	}
	fmt.Printf("bench: outputs: markdown-only jobs on the article fixture: %.2f pages/s\n", pps(mdRuns*len(urls), md))
	return nil
}

// runRequests runs every request built for every URL on the lib's tabs.
func (l *lib) runRequests(ctx context.Context, urls []string, build func(string) []capture.Request) (time.Duration, error) {
	work := make(chan capture.Request)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for range l.tabs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for req := range work {
				cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
				res, err := l.b.Capture(cctx, req)
				cancel()
				if err == nil && l.stages != nil {
					mu.Lock()
					l.stages.addTimings(res.Timings)
					mu.Unlock()
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("%s: %w", req.URL, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, u := range urls {
		for _, r := range build(u) {
			work <- r
		}
	}
	close(work)
	wg.Wait()
	return time.Since(start), firstErr
}
