package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"

	"github.com/snapq/snapq/capture"
)

// floor is the bare go-rod loop: one warm browser, one long-lived tab per
// worker in the default context, no clean slate, no queue, no storage. It
// captures each page with snapq's own segmented PNG code (capture.Shoot: one
// band per call, Chromium's fast PNG encoder, rows cut in Go), or with
// fullPage one full-page PNG per URL the way rod does it
// (Page.Screenshot(true, nil)): issue 31's floor, the naive loop.
type floor struct {
	l        *launcher.Launcher
	b        *rod.Browser
	pages    []*rod.Page
	fullPage bool
}

func newFloor(ctx context.Context, chrome string, tabs int) (*floor, error) {
	l := launcher.New().Bin(chrome).Headless(true).Leakless(true).
		Set("disable-gpu").Set("disable-background-networking").Set("disable-component-update").
		Set("disable-sync").Set("no-first-run").Set("hide-scrollbars").Set("mute-audio")
	if os.Geteuid() == 0 {
		l = l.NoSandbox(true)
	}
	u, err := l.Launch()
	if err != nil {
		return nil, fmt.Errorf("launch floor chromium: %w", err)
	}
	b := rod.New().ControlURL(u).Context(ctx)
	if err := b.Connect(); err != nil {
		l.Kill()
		return nil, err
	}
	f := &floor{l: l, b: b}
	for range tabs {
		p, err := b.Page(proto.TargetCreateTarget{URL: "about:blank"})
		if err != nil {
			f.close()
			return nil, err
		}
		if err := (proto.EmulationSetDeviceMetricsOverride{Width: 1280, Height: 720, DeviceScaleFactor: 1}).Call(p); err != nil {
			f.close()
			return nil, err
		}
		f.pages = append(f.pages, p)
	}
	return f, nil
}

// groups are the floor's processes: this bench (rod's client) and its Chromium.
func (f *floor) groups() procGroups {
	return procGroups{alone: map[int]string{os.Getpid(): "bench (rod client)"}, roots: map[int]string{f.l.PID(): "chromium browser"}}
}

func (f *floor) close() {
	_ = f.b.Close()
	f.l.Kill()
	f.l.Cleanup()
}

// run captures every URL with the default options and returns the wall time.
func (f *floor) run(ctx context.Context, urls []string) (time.Duration, error) {
	work := make(chan string)
	errs := make(chan error, len(f.pages))
	var wg sync.WaitGroup
	start := time.Now()
	for _, p := range f.pages {
		wg.Add(1)
		go func(p *rod.Page) {
			defer wg.Done()
			for u := range work {
				// Retried like the worker retries a job (the time counts): on a
				// loaded machine a screenshot call can outlast its timeout.
				err := f.one(ctx, p, u)
				for try := 1; err != nil && try < 3 && ctx.Err() == nil; try++ {
					err = f.one(ctx, p, u)
				}
				if err != nil {
					errs <- fmt.Errorf("floor %s: %w", u, err)
					for range work {
					}
					return
				}
			}
		}(p)
	}
	for _, u := range urls {
		work <- u
	}
	close(work)
	wg.Wait()
	d := time.Since(start)
	select {
	case err := <-errs:
		return 0, err
	default:
		return d, nil
	}
}

func (f *floor) one(ctx context.Context, p *rod.Page, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	pg := p.Context(ctx)
	if err := pg.Navigate(url); err != nil {
		return err
	}
	if err := pg.WaitLoad(); err != nil {
		return err
	}
	if f.fullPage {
		png, err := pg.Screenshot(true, nil)
		if err == nil && len(png) == 0 {
			err = fmt.Errorf("%s: an empty full-page PNG", url)
		}
		return err
	}
	res, err := pg.Eval(`() => Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0)`)
	if err != nil {
		return err
	}
	req := capture.Request{URL: url, Name: "floor",
		Viewport:   capture.Viewport{Width: 1280, Height: 720, DeviceScaleFactor: 1},
		Screenshot: capture.Screenshot{Mode: capture.ModeSegments, Format: capture.FormatPNG, MaxSegments: capture.DefaultMaxSegments}}
	imgs, _, err := capture.Shoot(ctx, p, req, res.Value.Int(), 30*time.Second)
	if err != nil {
		return err
	}
	if len(imgs) == 0 {
		return fmt.Errorf("no images")
	}
	return nil
}
