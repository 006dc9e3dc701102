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

// errDocumentCut ends the waits when the main document's body fails after its response
// arrived (tab.untilDocumentCut).
var errDocumentCut = errors.New("the main document was cut short")

// documentCutError is the failure of a job whose main document's body failed after its
// response arrived (reason is Chromium's error text, e.g. "net::ERR_CONTENT_LENGTH_MISMATCH"):
// a short body is invalid_response, whatever cut it, and another attempt may get it whole.
func documentCutError(reason string) *Error {
	name := strings.TrimPrefix(strings.TrimSpace(reason), "net::")
	what, ok := cutReasons[name]
	if !ok {
		what = netErrorClass(name).what
	}
	return newError(CodeInvalidResponse, true, errDocumentCut,
		"the page's document was cut short: %s (%s); nothing was captured of the partial page", what, reason)
}

// isBodyCut tells whether Chromium's error text for a failed request is one of the ways a
// body is cut short (cutReasons).
func isBodyCut(errorText string) bool {
	_, ok := cutReasons[strings.TrimPrefix(strings.TrimSpace(errorText), "net::")]
	return ok
}

var cutReasons = map[string]string{
	"ERR_CONTENT_LENGTH_MISMATCH":     "the connection closed before the body reached its Content-Length",
	"ERR_INCOMPLETE_CHUNKED_ENCODING": "the connection closed before the last chunk of the body",
	"ERR_CONNECTION_RESET":            "the connection was reset while the body was loading",
	"ERR_CONNECTION_CLOSED":           "the connection closed while the body was loading",
}

// classifyNetError maps Chromium's net::ERR_* text, the only signal Page.navigate gives, to a
// stable code and whether another attempt could help (net/base/net_error_list.h). A code
// Chromium adds later falls to CodeNavigationFailed (retried), never to CodeInternal: a
// failed navigation is the target's doing or the network's, not a bug in snapq.
func classifyNetError(reason string, err error) *Error {
	name := strings.TrimPrefix(strings.TrimSpace(reason), "net::")
	nc := netErrorClass(name)
	return newError(nc.code, nc.retry, err, "%s (%s)", nc.what, reason)
}

type netClass struct {
	code  string
	retry bool
	what  string
}

// netErrors are the exact names; netPrefixes catch families (checked after the names).
var netErrors = map[string]netClass{
	"ERR_NAME_NOT_RESOLVED":      {CodeDNSFailure, false, "the host name could not be resolved"},
	"ERR_NAME_RESOLUTION_FAILED": {CodeDNSFailure, false, "the host name could not be resolved"},
	"ERR_ICANN_NAME_COLLISION":   {CodeDNSFailure, false, "the host name resolves to ICANN's name-collision address"},
	"ERR_DNS_MALFORMED_RESPONSE": {CodeDNSFailure, false, "the DNS answer was malformed"},
	"ERR_DNS_TIMED_OUT":          {CodeConnectionFailed, true, "the DNS lookup timed out"},
	"ERR_DNS_SERVER_FAILED":      {CodeConnectionFailed, true, "the DNS server failed"},

	"ERR_UNSAFE_PORT":                      {CodeUnsafePort, false, "Chromium refuses to connect to this port"},
	"ERR_INVALID_URL":                      {CodeInvalidURL, false, "Chromium considers the URL invalid"},
	"ERR_DISALLOWED_URL_SCHEME":            {CodeInvalidURL, false, "the URL's scheme is not allowed"},
	"ERR_UNKNOWN_URL_SCHEME":               {CodeInvalidURL, false, "the URL's scheme is unknown"},
	"ERR_FILE_NOT_FOUND":                   {CodeInvalidURL, false, "the URL names no file"},
	"ERR_ACCESS_DENIED":                    {CodeInvalidURL, false, "access to the URL is denied"},
	"ERR_BLOCKED_BY_CLIENT":                {CodeBlockedByClient, false, "the browser blocked the request"},
	"ERR_BLOCKED_BY_ADMINISTRATOR":         {CodeBlockedByClient, false, "the browser's policy blocked the request"},
	"ERR_BLOCKED_BY_RESPONSE":              {CodeBlockedByResponse, false, "the response's headers forbid loading it here"},
	"ERR_BLOCKED_BY_CSP":                   {CodeBlockedByResponse, false, "a Content-Security-Policy blocked the request"},
	"ERR_BLOCKED_BY_ORB":                   {CodeBlockedByResponse, false, "opaque-response blocking stopped the response"},
	"ERR_CLEARTEXT_NOT_PERMITTED":          {CodeBlockedByResponse, false, "cleartext HTTP is not permitted"},
	"ERR_TOO_MANY_REDIRECTS":               {CodeRedirectFailed, false, "the page redirects too many times"},
	"ERR_UNSAFE_REDIRECT":                  {CodeRedirectFailed, false, "the page redirects to a URL the browser refuses"},
	"ERR_INVALID_REDIRECT":                 {CodeRedirectFailed, false, "the page redirects to an invalid URL"},
	"ERR_BAD_SSL_CLIENT_AUTH_CERT":         {CodeCertificateError, false, "the server asks for a client certificate"},
	"ERR_SSL_CLIENT_AUTH_CERT_NEEDED":      {CodeCertificateError, false, "the server asks for a client certificate"},
	"ERR_SSL_PINNED_KEY_NOT_IN_CERT_CHAIN": {CodeCertificateError, false, "the server's certificate does not match its pinned key"},

	"ERR_INVALID_HTTP_RESPONSE":                         {CodeInvalidResponse, true, "the server's response is not valid HTTP"},
	"ERR_INVALID_RESPONSE":                              {CodeInvalidResponse, true, "the server's response is invalid"},
	"ERR_RESPONSE_HEADERS_TRUNCATED":                    {CodeInvalidResponse, true, "the server's response headers were cut short"},
	"ERR_RESPONSE_HEADERS_TOO_BIG":                      {CodeInvalidResponse, true, "the server's response headers are too big"},
	"ERR_CONTENT_LENGTH_MISMATCH":                       {CodeInvalidResponse, true, "the response was shorter than its Content-Length"},
	"ERR_INCOMPLETE_CHUNKED_ENCODING":                   {CodeInvalidResponse, true, "the chunked response ended early"},
	"ERR_INVALID_CHUNKED_ENCODING":                      {CodeInvalidResponse, true, "the chunked response is malformed"},
	"ERR_CONTENT_DECODING_FAILED":                       {CodeInvalidResponse, true, "the response's Content-Encoding could not be decoded"},
	"ERR_HTTP_RESPONSE_CODE_FAILURE":                    {CodeInvalidResponse, true, "the server answered an error status without a page"},
	"ERR_HTTP2_PROTOCOL_ERROR":                          {CodeInvalidResponse, true, "the server broke the HTTP/2 protocol"},
	"ERR_QUIC_PROTOCOL_ERROR":                           {CodeInvalidResponse, true, "the server broke the QUIC protocol"},
	"ERR_RESPONSE_HEADERS_MULTIPLE_LOCATION":            {CodeInvalidResponse, true, "the response has several Location headers"},
	"ERR_RESPONSE_HEADERS_MULTIPLE_CONTENT_LENGTH":      {CodeInvalidResponse, true, "the response has several Content-Length headers"},
	"ERR_RESPONSE_HEADERS_MULTIPLE_CONTENT_DISPOSITION": {CodeInvalidResponse, true, "the response has several Content-Disposition headers"},

	"ERR_TIMED_OUT":                {CodeConnectionFailed, true, "the connection timed out"},
	"ERR_CONNECTION_RESET":         {CodeConnectionFailed, true, "the connection was reset before the server answered"},
	"ERR_CONNECTION_CLOSED":        {CodeConnectionFailed, true, "the connection was closed before the server answered"},
	"ERR_ADDRESS_UNREACHABLE":      {CodeConnectionFailed, true, "the address is unreachable"},
	"ERR_ADDRESS_INVALID":          {CodeConnectionFailed, true, "the address is invalid"},
	"ERR_EMPTY_RESPONSE":           {CodeConnectionFailed, true, "the server closed the connection without an answer"},
	"ERR_ABORTED":                  {CodeConnectionFailed, true, "the navigation was aborted"},
	"ERR_NETWORK_CHANGED":          {CodeConnectionFailed, true, "the network changed"},
	"ERR_INTERNET_DISCONNECTED":    {CodeConnectionFailed, true, "the network is down"},
	"ERR_TUNNEL_CONNECTION_FAILED": {CodeConnectionFailed, true, "the egress proxy could not connect"},
	"ERR_PROXY_CONNECTION_FAILED":  {CodeConnectionFailed, true, "the egress proxy could not be reached"},
	"ERR_SOCKET_NOT_CONNECTED":     {CodeConnectionFailed, true, "the connection dropped"},
	"ERR_NETWORK_IO_SUSPENDED":     {CodeConnectionFailed, true, "network I/O was suspended"},
	"ERR_NETWORK_ACCESS_DENIED":    {CodeConnectionFailed, true, "network access was denied"},
	"ERR_INSUFFICIENT_RESOURCES":   {CodeNavigationFailed, true, "the browser ran out of resources"},
	"ERR_OUT_OF_MEMORY":            {CodeNavigationFailed, true, "the browser ran out of memory"},
}

var netPrefixes = []struct {
	prefix string
	class  netClass
}{
	{"ERR_CERT_", netClass{CodeCertificateError, false, "the server's TLS certificate is not trusted"}},
	{"ERR_SSL_", netClass{CodeTLSFailed, false, "the TLS handshake failed"}},
	{"ERR_CONNECTION_", netClass{CodeConnectionFailed, true, "the connection failed"}},
	{"ERR_PROXY_", netClass{CodeConnectionFailed, true, "the egress proxy failed"}},
	{"ERR_DNS_", netClass{CodeDNSFailure, false, "the host name could not be resolved"}},
}

func netErrorClass(name string) netClass {
	if nc, ok := netErrors[name]; ok {
		return nc
	}
	for _, p := range netPrefixes {
		if strings.HasPrefix(name, p.prefix) {
			return p.class
		}
	}
	return netClass{CodeNavigationFailed, true, "the page could not be loaded"}
}
