package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/snapq/snapq/client"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progress shows a batch's progress: done/total, succeeded, failed, running,
// rate and ETA.
type progress interface {
	update(b client.Batch)
	finish(b client.Batch)
}

// newProgress returns a live bar when w is a terminal, plain lines (at most
// one a second, and the last) otherwise, nothing when quiet.
func newProgress(w io.Writer, quiet bool) progress {
	switch {
	case quiet:
		return noProgress{}
	case isTerminal(w):
		return &barProgress{w: w}
	default:
		return &lineProgress{w: w, start: time.Now(), every: time.Second}
	}
}

type noProgress struct{}

func (noProgress) update(client.Batch) {}
func (noProgress) finish(client.Batch) {}

// barProgress draws a progress bar on a terminal (schollz/progressbar).
type barProgress struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

func (p *barProgress) update(b client.Batch) {
	total := max(b.Total, b.Counts.Total())
	if p.bar == nil {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetWidth(30),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("jobs"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetRenderBlankState(true),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.w) }),
		)
	}
	p.bar.Describe(fmt.Sprintf("%s ok %d failed %d running %d", short(b.ID), b.Counts.Succeeded,
		b.Counts.Failed+b.Counts.Canceled, b.Counts.Running))
	_ = p.bar.Set(b.Counts.Done())
}

func (p *barProgress) finish(b client.Batch) {
	p.update(b)
	if !p.bar.IsFinished() {
		_ = p.bar.Finish()
	}
}

// lineProgress writes one line per change, at most one per second.
type lineProgress struct {
	w       io.Writer
	start   time.Time
	every   time.Duration
	last    time.Time
	lastOut string
}

func (p *lineProgress) update(b client.Batch) { p.line(b, false) }
func (p *lineProgress) finish(b client.Batch) { p.line(b, true) }

func (p *lineProgress) line(b client.Batch, final bool) {
	total, done := max(b.Total, b.Counts.Total()), b.Counts.Done()
	elapsed := time.Since(p.start)
	rate := float64(done) / max(elapsed.Seconds(), 0.001)
	eta := "-"
	if rate > 0 && done < total {
		eta = (time.Duration(float64(total-done)/rate) * time.Second).Round(time.Second).String()
	} else if done >= total {
		eta = "0s"
	}
	out := fmt.Sprintf("batch %s: %d/%d done, %d succeeded, %d failed, %d running",
		b.ID, done, total, b.Counts.Succeeded, b.Counts.Failed+b.Counts.Canceled, b.Counts.Running)
	if out == p.lastOut && !final {
		return
	}
	if !final && time.Since(p.last) < p.every {
		return
	}
	if out == p.lastOut && final {
		return // the final state was printed already
	}
	p.last, p.lastOut = time.Now(), out
	fmt.Fprintf(p.w, "%s, %.1f jobs/s, ETA %s\n", out, rate, eta)
}

// short is the first 8 characters of an id, for narrow displays.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
