package capture

import (
	"context"
	"fmt"
	"time"

	"github.com/go-rod/rod"
)

// Deep capture defaults and caps (docs/api/capture.md, "Virtualised pages").
const (
	DefaultDeepMaxItems  = 2_000
	DefaultDeepMaxBytes  = 4 << 20
	DefaultDeepMax       = 15 * time.Second
	DefaultDeepIdleSteps = 3
	MaxDeepItems         = 20_000
	MaxDeepBytes         = 16 << 20
	MaxDeepMax           = 60 * time.Second
	MaxDeepIdleSteps     = 20
	// deepStepDelay is the pause after each scroll step for the page to render.
	deepStepDelay = 150 * time.Millisecond
)

// Reasons a deep capture walk stopped (DeepCaptureReport.Stopped).
const (
	DeepStoppedEnd      = "end"       // the bottom was reached and nothing new came for idle_steps
	DeepStoppedIdle     = "idle"      // nothing new for idle_steps before the bottom
	DeepStoppedMaxItems = "max_items" // bounds: the outputs hold the items seen before them
	DeepStoppedMaxBytes = "max_bytes"
	DeepStoppedMaxTime  = "max_ms"
)

// DeepCapture walks a virtualised page (a list that renders only the items near the scroll
// position) a viewport at a time and gives the html, text, markdown and links outputs every
// item it saw, in order, once each. Screenshots are taken before the walk and do not
// change. Zero numbers take the defaults above.
type DeepCapture struct {
	Enabled   bool `json:"enabled,omitempty"`
	MaxItems  int  `json:"max_items,omitempty"`
	MaxBytes  int  `json:"max_bytes,omitempty"` // of the items' outer HTML
	MaxMS     int  `json:"max_ms,omitempty"`
	IdleSteps int  `json:"idle_steps,omitempty"` // steps without a new item that end the walk
}

// DeepCaptureReport is what a deep capture walk did (Result.DeepCapture).
type DeepCaptureReport struct {
	Items   int    `json:"items"` // distinct items merged into the outputs
	Steps   int    `json:"steps"` // scroll steps taken
	Bytes   int    `json:"bytes"` // outer HTML of the merged items
	Stopped string `json:"stopped"`
	// Bounded: the walk stopped at max_items, max_bytes or max_ms; items past it are missing.
	Bounded  bool   `json:"bounded"`
	Scroller string `json:"scroller"` // the element scrolled ("document" or a selector)
	List     string `json:"list"`     // the element whose children are the items
}

// resolved returns d with its defaults filled in, the walk's time bounded by budget.
func (d DeepCapture) resolved(budget time.Duration) DeepCapture {
	if d.MaxItems <= 0 {
		d.MaxItems = DefaultDeepMaxItems
	}
	if d.MaxBytes <= 0 {
		d.MaxBytes = DefaultDeepMaxBytes
	}
	if d.MaxMS <= 0 {
		d.MaxMS = int(DefaultDeepMax / time.Millisecond)
	}
	if d.IdleSteps <= 0 {
		d.IdleSteps = DefaultDeepIdleSteps
	}
	if ms := int(budget / time.Millisecond); budget > 0 && ms < d.MaxMS {
		d.MaxMS = max(ms, 100)
	}
	return d
}

// deepCapture runs the walk when req asks for it and for a DOM text output, then leaves the
// merged items in the live page for pageOutputs to read.
func deepCapture(ctx context.Context, p *rod.Page, req Request, res *Result) error {
	d := req.Prepare.DeepCapture
	if !d.Enabled || !(req.wants(OutputHTML) || req.wants(OutputText) || req.wants(OutputMarkdown) || req.wants(OutputLinks)) {
		return nil
	}
	budget := time.Duration(0)
	if dl, ok := ctx.Deadline(); ok {
		budget = time.Until(dl) / 2 // the other half is for the outputs themselves
	}
	d = d.resolved(budget)
	start := time.Now()
	var rep DeepCaptureReport
	js := fmt.Sprintf("%s(%d, %d, %d, %d, %d)", deepJS, d.MaxItems, d.MaxBytes, d.MaxMS, d.IdleSteps, deepStepDelay.Milliseconds())
	err := evalJSON(p.Context(ctx), js, &rep)
	logStep(res, "deep_capture", "", start, err,
		fmt.Sprintf("%d items, %d steps, %s", rep.Items, rep.Steps, rep.Stopped))
	if err != nil {
		return fmt.Errorf("deep capture: %w", err)
	}
	rep.Bounded = rep.Stopped == DeepStoppedMaxItems || rep.Stopped == DeepStoppedMaxBytes || rep.Stopped == DeepStoppedMaxTime
	res.DeepCapture = &rep
	return nil
}
