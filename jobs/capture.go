package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Synchronous capture (POST /v1/capture): one target, with exactly the url,
// name and options of a batch target, and wait_ms. Underneath it is a
// one-job batch written by Submit (the same validation, in-flight cap,
// dedupe, retries, artifacts, retention and events), whose job rides the
// interactive lane (Batch.Interactive).

// Bounds of wait_ms.
const (
	DefaultCaptureWait = 30 * time.Second
	MaxCaptureWait     = 120 * time.Second
)

// CaptureSubmission is one synchronous capture.
type CaptureSubmission struct {
	Body           []byte // {"url", "name", "options", "wait_ms"}
	Owner          string
	IdempotencyKey string
	// Output is the output the caller wants the bytes of (an Output* name
	// of capture: "screenshot", "markdown", "pdf", "html"), "" for the job
	// view. A target without options.outputs gets [Output]; one whose
	// outputs lack it is refused.
	Output string
	// Format is the screenshot format wanted with Output "screenshot"
	// (png, jpeg, webp): set when the options give none, refused when they
	// give another.
	Format string
}

// SubmitCapture validates and stores the one-job batch of a synchronous
// capture and returns its job and how long the caller will wait for it.
// Field errors name the fields of the capture body ("url", "options.…").
func (s *Service) SubmitCapture(ctx context.Context, sub CaptureSubmission) (*Batch, *Job, time.Duration, error) {
	target, wait, err := captureTarget(sub)
	if err != nil {
		return nil, nil, 0, err
	}
	body, err := json.Marshal(map[string]any{"targets": []any{target}})
	if err != nil {
		return nil, nil, 0, fmt.Errorf("encode capture target: %w", err)
	}
	b, js, _, err := s.Submit(ctx, Submission{Body: body, Owner: sub.Owner, IdempotencyKey: sub.IdempotencyKey, Interactive: true})
	if err != nil {
		return nil, nil, 0, captureFields(err)
	}
	if len(js) != 1 {
		return nil, nil, 0, fmt.Errorf("capture batch %s has %d jobs, want 1", b.ID, len(js))
	}
	return b, js[0], wait, nil
}

// captureTarget splits a capture body into its target (a batch target's
// fields, checked by the batch parser) and wait_ms, and applies the output
// the caller asked for.
func captureTarget(sub CaptureSubmission) (map[string]any, time.Duration, error) {
	var errs FieldErrors
	m, err := DecodeObject(sub.Body)
	if err != nil {
		errs.Add("invalid_json", "", err.Error())
		return nil, 0, ValidationErrors(errs)
	}
	wait := DefaultCaptureWait
	if raw, ok := m["wait_ms"]; ok {
		delete(m, "wait_ms")
		n, ok := raw.(json.Number)
		ms, err := n.Int64()
		if !ok || err != nil || ms < 0 || time.Duration(ms)*time.Millisecond > MaxCaptureWait {
			errs.Add("invalid_wait", "wait_ms", fmt.Sprintf("an integer from 0 to %d", MaxCaptureWait.Milliseconds()))
		}
		wait = time.Duration(ms) * time.Millisecond
	}
	if sub.Output != "" {
		applyOutput(m, sub.Output, sub.Format, &errs)
	}
	if err := ValidationErrors(errs); err != nil {
		return nil, 0, err
	}
	return m, wait, nil
}

// applyOutput makes the target produce output (and the screenshot format),
// or records why it cannot. Options of the wrong shape are left to the
// batch parser to report.
func applyOutput(m map[string]any, output, format string, errs *FieldErrors) {
	opts, ok := m["options"].(map[string]any)
	if _, given := m["options"]; !given {
		opts, ok = map[string]any{}, true
		m["options"] = opts
	}
	if !ok {
		return
	}
	switch outs, given := opts["outputs"]; {
	case !given:
		opts["outputs"] = []any{output}
	case !listHas(outs, output):
		errs.Add("not_acceptable", "options.outputs", fmt.Sprintf("the Accept header asks for the %s output, which options.outputs does not list", output))
	}
	if format == "" {
		return
	}
	shot, ok := opts["screenshot"].(map[string]any)
	if _, given := opts["screenshot"]; !given {
		shot, ok = map[string]any{}, true
		opts["screenshot"] = shot
	}
	if !ok {
		return
	}
	switch f, given := shot["format"]; {
	case !given:
		shot["format"] = format
	case f != format:
		errs.Add("not_acceptable", "options.screenshot.format", fmt.Sprintf("the Accept header asks for %s images, options.screenshot.format for another", format))
	}
}

func listHas(v any, s string) bool {
	l, _ := v.([]any)
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// captureFields renames the batch parser's field names to the capture
// body's: "targets[0].options.x" → "options.x", "targets" → "url".
func captureFields(err error) error {
	var ve *ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	out := make([]FieldError, len(ve.Fields))
	for i, f := range ve.Fields {
		switch {
		case f.Field == "targets":
			f.Field = "url"
		case strings.HasPrefix(f.Field, "targets[0]."):
			f.Field = strings.TrimPrefix(f.Field, "targets[0].")
		}
		out[i] = f
	}
	return &ValidationError{Fields: out}
}
