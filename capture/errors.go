package capture

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-rod/rod"
)

// Causes set on a job's context when something outside the job ends it. They let a blocked
// CDP call fail fast with the right code instead of hanging until the deadline.
var (
	errTargetCrashed = errors.New("the page's renderer crashed")
	errBrowserGone   = errors.New("the browser connection closed")
	errBrowserClosed = errors.New("the capture browser was closed")
	errCallTimeout   = errors.New("screenshot call timed out")
	errTargetClosed  = errors.New("the page's tab was closed")
)

// ErrUnavailable is wrapped by errors that mean no browser could be reached: a remote
// endpoint refused the connection, timed out, or answered 429/503 (an overloaded pool).
// Capture reports it as CodeBrowserUnavailable before anything of the job has run.
var ErrUnavailable = errors.New("no browser is available")

// ErrClosed is returned (wrapped in *Error with CodeCanceled) by Capture after Close.
var ErrClosed = errBrowserClosed

// newError builds a classified error. Its message may quote the page (an exception, a
// navigation's reason), so it is capped at MaxMessageBytes.
func newError(code string, retryable bool, err error, format string, args ...any) *Error {
	return &Error{Code: code, Message: CapMessage(fmt.Sprintf(format, args...)), Retryable: retryable, Err: err}
}

// phase names the step a job was in, for messages and timeout classification.
type phase string

const (
	phaseSlot     phase = "waiting for a browser slot"
	phaseNavigate phase = "navigating"
	phaseWait     phase = "waiting for the page"
	phaseCapture  phase = "capturing"
)

// classify turns any failure into *Error. jobCtx is the context the failing call ran under
// (its cause says whether the renderer or browser went away); parent is the caller's context.
func classify(parent, jobCtx context.Context, ph phase, err error) *Error {
	var ce *Error
	if errors.As(err, &ce) {
		return ce
	}
	cause := context.Cause(jobCtx)
	switch {
	case errors.Is(cause, errTargetCrashed), errors.Is(err, errTargetCrashed):
		return newError(CodeBrowserCrashed, true, errTargetCrashed, "the page crashed the renderer while %s", ph)
	case errors.Is(cause, errTargetClosed), errors.Is(err, errTargetClosed):
		return newError(CodeBrowserCrashed, true, errTargetClosed, "the page's tab went away while %s", ph)
	case errors.Is(cause, errBrowserClosed), errors.Is(err, errBrowserClosed):
		return newError(CodeCanceled, true, errBrowserClosed, "the capture browser was shut down while %s", ph)
	case errors.Is(cause, errBrowserGone), errors.Is(err, errBrowserGone):
		return newError(CodeBrowserCrashed, true, errBrowserGone, "the browser went away while %s", ph)
	case errors.Is(err, ErrUnavailable) && parent.Err() == nil:
		return newError(CodeBrowserUnavailable, true, err, "no browser could take the job: %s", unavailableReason(err))
	case errors.Is(parent.Err(), context.DeadlineExceeded):
		return newError(CodeNavigationTimeout, true, context.DeadlineExceeded, "the job's time ran out while %s", ph)
	case errors.Is(parent.Err(), context.Canceled):
		return newError(CodeCanceled, true, context.Canceled, "the job was canceled while %s", ph)
	case errors.Is(err, errCallTimeout):
		return newError(CodeInternal, true, err, "a screenshot call did not finish in time")
	}
	var nav *rod.NavigationError
	if errors.As(err, &nav) {
		return classifyNetError(nav.Reason, err)
	}
	return newError(CodeInternal, true, err, "failed while %s", ph)
}

// classifyNetError maps Chromium's net::ERR_* text, the only signal Page.navigate gives.
func classifyNetError(reason string, err error) *Error {
	code := strings.TrimPrefix(strings.TrimSpace(reason), "net::")
	switch {
	case code == "ERR_NAME_NOT_RESOLVED", code == "ERR_NAME_RESOLUTION_FAILED":
		return newError(CodeDNSFailure, false, err, "the host name could not be resolved (%s)", reason)
	case strings.HasPrefix(code, "ERR_CONNECTION_"), code == "ERR_TIMED_OUT", code == "ERR_ADDRESS_UNREACHABLE",
		code == "ERR_ADDRESS_INVALID", code == "ERR_EMPTY_RESPONSE", code == "ERR_ABORTED",
		code == "ERR_NETWORK_CHANGED", code == "ERR_INTERNET_DISCONNECTED", code == "ERR_TUNNEL_CONNECTION_FAILED",
		code == "ERR_PROXY_CONNECTION_FAILED", code == "ERR_INVALID_HTTP_RESPONSE", code == "ERR_INVALID_RESPONSE",
		code == "ERR_TOO_MANY_REDIRECTS", code == "ERR_UNSAFE_REDIRECT", code == "ERR_HTTP2_PROTOCOL_ERROR",
		code == "ERR_QUIC_PROTOCOL_ERROR", code == "ERR_RESPONSE_HEADERS_TRUNCATED",
		code == "ERR_CONTENT_LENGTH_MISMATCH", code == "ERR_INCOMPLETE_CHUNKED_ENCODING",
		strings.HasPrefix(code, "ERR_SSL_"), strings.HasPrefix(code, "ERR_CERT_"):
		return newError(CodeConnectionFailed, true, err, "the page could not be loaded (%s)", reason)
	}
	return newError(CodeInternal, true, err, "navigation failed (%s)", reason)
}
