package main

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/capture/markup"
)

// lib drives snapq's capture package directly (clean slate per job, no
// queue, no storage), to split the e2e cost into browser-side and
// pipeline-side parts.
type lib struct {
	b      *capture.Browser
	tabs   int
	stages *stageTable // when set, gets every capture's Result.Timings
	marker []byte      // "TMPDIR=…\x00" of its Chromium (procGroups)
}

// newLib starts the capture package's Browser. Its Chromium gets the TMPDIR
// the process has when it launches (capture's chromiumEnv): a directory of
// its own, set for the rest of the bench (a browser recycled later must keep
// it), marks its processes so their CPU is counted.
func newLib(ctx context.Context, chrome string, tabs int, extra ...string) (*lib, error) {
	dir, err := os.MkdirTemp("", "snapq-bench-lib-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o1777); err != nil { // like /tmp: Chromium may run as another user
		return nil, err
	}
	os.Setenv("TMPDIR", dir) //nolint:errcheck // a valid name and value
	cfg := capture.DefaultConfig()
	cfg.ChromeBin = chrome
	cfg.Tabs = tabs
	cfg.Markup = markup.Codec{}
	for _, f := range extra { // "name" or "name=value"
		if cfg.ExtraFlags == nil {
			cfg.ExtraFlags = map[string]string{}
		}
		name, value, _ := strings.Cut(f, "=")
		cfg.ExtraFlags[name] = value
	}
	b, err := capture.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &lib{b: b, tabs: tabs, marker: []byte("TMPDIR=" + dir + "\x00")}, nil
}

func (l *lib) close() { _ = l.b.Close() }

// groups are the bench process (the capture package) and the lib's Chromium.
func (l *lib) groups() procGroups {
	return procGroups{alone: map[int]string{os.Getpid(): "bench (capture package)"}, marker: l.marker}
}

func (l *lib) run(ctx context.Context, urls []string) (time.Duration, error) {
	return l.runMode(ctx, urls, "")
}

// runMode captures every URL with the default request but its screenshot
// mode ("": the default, segments).
func (l *lib) runMode(ctx context.Context, urls []string, mode string) (time.Duration, error) {
	return l.runRequests(ctx, urls, func(u string) []capture.Request {
		return []capture.Request{{URL: u, Name: "lib", Screenshot: capture.Screenshot{Mode: mode}}}
	})
}

// libOnly measures the capture package alone against the floor, interleaved
// over o.rounds, and prints its stage table: needs only Chromium.
func libOnly(o options) error {
	ctx := context.Background()
	sites, stopSites, err := serveSites(strings.Split(o.addrs, ","))
	if err != nil {
		return err
	}
	defer stopSites()
	corpus := buildCorpus(sites, o.pages)
	fl, err := newFloor(ctx, o.chrome, o.concurrency)
	if err != nil {
		return err
	}
	defer fl.close()
	lb, err := newLib(ctx, o.chrome, o.concurrency)
	if err != nil {
		return err
	}
	defer lb.close()
	warm := corpus[:min(8, len(corpus))]
	if _, err := fl.run(ctx, warm); err != nil {
		return err
	}
	if _, err := lb.run(ctx, warm); err != nil {
		return err
	}
	lb.stages = newStageTable("")
	cs := []*contender{
		{name: "floor", groups: fl.groups(), run: func() (time.Duration, error) { return fl.run(ctx, corpus) }},
		{name: "lib", groups: lb.groups(), run: func() (time.Duration, error) { return lb.run(ctx, corpus) }},
	}
	if o.libFlags != "" {
		// A Chromium of its own with the flags: its TMPDIR (newLib) marks its processes.
		lf, err := newLib(ctx, o.chrome, o.concurrency, strings.Split(o.libFlags, ",")...)
		if err != nil {
			return err
		}
		defer lf.close()
		if _, err := lf.run(ctx, warm); err != nil {
			return err
		}
		cs = append(cs, &contender{name: "lib+flags", groups: lf.groups(),
			run: func() (time.Duration, error) { return lf.run(ctx, corpus) }})
	}
	for _, mode := range strings.Split(o.libModes, ",") {
		if mode = strings.TrimSpace(mode); mode != "" {
			cs = append(cs, &contender{name: "lib-" + mode, groups: lb.groups(),
				run: func() (time.Duration, error) { return lb.runMode(ctx, corpus, mode) }})
		}
	}
	var cpu cpuTable
	for r := 1; r <= o.rounds; r++ {
		if err := runRound(cs, r, len(corpus), &cpu); err != nil {
			return err
		}
	}
	lb.stages.print()
	cpu.print()
	summary(cs, len(corpus), o)
	return nil
}
