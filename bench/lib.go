package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/snapq/snapq/capture"
)

// lib drives snapq's capture package directly (clean slate per job, no
// queue, no storage), to split the e2e cost into browser-side and
// pipeline-side parts.
type lib struct {
	b    *capture.Browser
	tabs int
}

func newLib(ctx context.Context, chrome string, tabs int) (*lib, error) {
	cfg := capture.DefaultConfig()
	cfg.ChromeBin = chrome
	cfg.Tabs = tabs
	b, err := capture.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &lib{b: b, tabs: tabs}, nil
}

func (l *lib) close() { _ = l.b.Close() }

func (l *lib) run(ctx context.Context, urls []string) (time.Duration, error) {
	work := make(chan string)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for range l.tabs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range work {
				cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
				_, err := l.b.Capture(cctx, capture.Request{URL: u, Name: "lib"})
				cancel()
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("lib %s: %w", u, err)
					}
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
	return time.Since(start), firstErr
}
