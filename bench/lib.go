package main

import (
	"context"
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
	return l.runRequests(ctx, urls, func(u string) []capture.Request {
		return []capture.Request{{URL: u, Name: "lib"}}
	})
}
