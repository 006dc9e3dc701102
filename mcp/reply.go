package mcp

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/snapq/snapq/client"
)

// Reply caps: no tool result can flood a model's context.
const (
	// MaxText is the most characters of page text (Markdown) one reply holds.
	MaxText = 100_000
	// DefaultText is fetch's max_chars when the model gives none.
	DefaultText = 20_000
	// MaxImages is the most images one screenshot reply holds inline.
	MaxImages = 5
	// DefaultImages is screenshot's max_images when the model gives none.
	DefaultImages = 2
	// MaxImageBytes is the most bytes of images one reply holds inline; an
	// image past it is given as a link instead.
	MaxImageBytes = 4 << 20
	// maxMessage caps an error message quoted to the model.
	maxMessage = 2000
)

// clip returns s cut to at most max characters, with an explicit marker when
// it was cut, and whether it was.
func clip(s string, max int) (string, bool) {
	n := utf8.RuneCountInString(s)
	if n <= max {
		return s, false
	}
	cut := 0
	for i := range s {
		if cut == max {
			s = s[:i]
			break
		}
		cut++
	}
	return s + fmt.Sprintf("\n\n[truncated by snapq: showing the first %d of %d characters]", max, n), true
}

// toolError is a failure the model is told about: snapq's error code, its
// message, and a hint to act on.
type toolError struct {
	Code       string `json:"code"`
	Message    string `json:"message"`
	Field      string `json:"field,omitempty"`
	Hint       string `json:"hint,omitempty"`
	RetryAfter int    `json:"retry_after_s,omitempty"`
	// JobID and BatchID name the capture the error is about, when there is one.
	JobID   string `json:"job_id,omitempty"`
	BatchID string `json:"batch_id,omitempty"`
}

func (e *toolError) Error() string { return e.Code + ": " + e.Message }

// jobFailed is the tool error of a capture that ended failed or canceled.
func jobFailed(j *client.Job) *toolError {
	e := &toolError{Code: "capture_failed", Message: "the capture " + j.Status, JobID: j.ID, BatchID: j.BatchID}
	if j.Error != nil {
		e.Code, e.Message = j.Error.Code, j.Error.Message
	}
	return e
}

// pending is the tool error of a capture not done within the wait.
func pending(j *client.Job) *toolError {
	return &toolError{Code: "capture_pending", Message: "the page was not captured within the wait; it is " + j.Status,
		JobID: j.ID, BatchID: j.BatchID,
		Hint: fmt.Sprintf("call batch_status with batch_id %q and job_id %q in a few seconds", j.BatchID, j.ID)}
}

// asToolError classifies err: an API error answer keeps its code, field and
// Retry-After; anything else (the api unreachable) is api_unavailable.
func asToolError(err error) *toolError {
	var te *toolError
	if errors.As(err, &te) {
		return te
	}
	var ae *client.Error
	if errors.As(err, &ae) {
		e := &toolError{Code: ae.Code, Message: ae.Message, Field: ae.Field}
		if ae.RetryAfter > 0 || ae.StatusCode == http.StatusTooManyRequests {
			e.RetryAfter = retryAfterSeconds(ae.RetryAfter)
		}
		return e
	}
	return &toolError{Code: "api_unavailable", Message: err.Error(),
		Hint: "snapq's api could not be reached; retry later or tell the user snapq is down"}
}

// hints are what a model can do about a code.
var hints = map[string]string{
	"blocked_address": "the URL (or a redirect from it) leads to an address snapq may not reach, " +
		"such as a private or internal network; use a public URL and do not retry this one",
	"dns_failure":             "the host name does not resolve; check its spelling",
	"connection_failed":       "the site did not accept the connection; retry later or try another URL",
	"navigation_timeout":      "the site did not answer in time; retry later",
	"certificate_error":       "the site's TLS certificate is not trusted; try the http:// URL or another page",
	"challenge_blocked":       "the site shows a bot check snapq does not solve; try another source",
	"unsafe_port":             "the URL's port is one browsers never connect to; use another URL",
	"invalid_url":             "give an absolute http:// or https:// URL",
	"unauthorized":            "the API key is missing or not valid; ask the user to set a snapq API key",
	"not_found":               "the id is unknown or belongs to another key; check it",
	"too_many_jobs_in_flight": "this API key has as many captures running as it may; wait for some to finish (batch_status) and retry",
	"too_large":               "the output is too large to return here; use its link",
	"stale_ref":               "the ref is not of the latest snapshot or its element left the page; call browser with command snapshot and use its refs",
	"bad_args":                "the verb's arguments are wrong; browser_help with the verb shows them",
	"unknown_command":         "use a verb browser_help lists",
	"too_many_sessions":       "this API key has as many browser sessions open as it may; close one (command close) or retry later",
	"no_session_worker":       "no worker had a free browser tab; retry in a minute",
}

// hintFor returns the hint of e: the code's, or one from its status.
func hintFor(e *toolError) string {
	if e.Hint != "" {
		return e.Hint
	}
	if e.RetryAfter > 0 {
		return fmt.Sprintf("snapq is limiting this API key's requests; retry after %d s", e.RetryAfter)
	}
	if h, ok := hints[e.Code]; ok {
		return h
	}
	if e.Field != "" {
		return "fix the argument " + e.Field + " and call again"
	}
	return ""
}

// errorResult is the tool result of err, flagged as an error, with the code
// and hint in text (for the model) and as structured content (for programs).
func errorResult(err error) *sdk.CallToolResult {
	e := *asToolError(err)
	e.Message, _ = clip(e.Message, maxMessage)
	e.Hint = hintFor(&e)
	var b strings.Builder
	fmt.Fprintf(&b, "snapq error %s: %s", e.Code, e.Message)
	if e.Field != "" {
		fmt.Fprintf(&b, " (argument %s)", e.Field)
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, "\nhint: %s", e.Hint)
	}
	res := &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: b.String()}},
		StructuredContent: map[string]any{"error": e}}
	return res
}

// retryAfterSeconds is d in whole seconds, at least 1.
func retryAfterSeconds(d time.Duration) int { return max(1, int(math.Ceil(d.Seconds()))) }
