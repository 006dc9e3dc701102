package capture

import (
	"fmt"
	"image"
	"time"
)

// Screenshot modes.
const (
	ModeSegments = "segments"
	ModeFull     = "full"
	ModeViewport = "viewport"
)

// Image formats.
const (
	FormatPNG  = "png"
	FormatJPEG = "jpeg"
	FormatWebP = "webp"
)

// Wait conditions for the navigation.
const (
	UntilLoad             = "load"
	UntilDOMContentLoaded = "domcontentloaded"
	UntilNetworkIdle      = "networkidle"
)

// Segment limits (screenshot.max_segments in web/openapi.json).
const (
	DefaultMaxSegments = 10
	HardMaxSegments    = 50
)

// Viewport is the emulated window the page is laid out in, in CSS pixels.
type Viewport struct {
	Width             int     `json:"width"`
	Height            int     `json:"height"`
	DeviceScaleFactor float64 `json:"device_scale_factor"`
}

// Screenshot selects how the page is turned into images.
type Screenshot struct {
	Mode        string `json:"mode"`              // segments | full | viewport
	Format      string `json:"format"`            // png | jpeg | webp
	Quality     int    `json:"quality,omitempty"` // 1..100, jpeg/webp only; 0 = encoder default
	MaxSegments int    `json:"max_segments"`      // normalized with NormalizeMaxSegments
	// Selector, when set, captures only the first matching element's box (element.go).
	Selector string `json:"selector,omitempty"`
}

// Wait says when the page counts as ready.
type Wait struct {
	Until           string // load | domcontentloaded | networkidle
	Selector        string // CSS selector that must be visible
	SelectorTimeout time.Duration
	Delay           time.Duration // extra sleep after everything else
	BestAttempt     bool          // a wait that times out is recorded, capture goes ahead
	// Page-readiness waits added with prepare.go (zero values: off).
	Fonts          bool          // await document.fonts.ready
	Images         bool          // every started image loaded and decoded
	HiddenSelector string        // wait until no visible element matches (SelectorTimeout)
	NetworkIdle    time.Duration // quiet period for UntilNetworkIdle; 0 = NetworkIdleQuiet
}

// Request is one page to capture. The caller has validated it.
type Request struct {
	URL        string
	Name       string // sanitized base name for the images, e.g. "example.com-docs"
	Viewport   Viewport
	Screenshot Screenshot
	Wait       Wait
	// Timeout is the page's budget from the moment a tab is assigned (time spent waiting
	// for a free tab does not eat it): the navigation, waits, preparation and actions run
	// within it. A navigation with no answer by then fails with CodeNavigationTimeout; a page
	// that answered but is not ready is captured as it is, with Result.Partial, in an extra
	// CaptureGrace(Timeout). Zero means only ctx bounds the job.
	Timeout time.Duration
	// Outputs lists what to produce from the one page load (Output* constants); nil or empty
	// means screenshots only. Screenshots go to Result.Images, the rest to Result.Files.
	Outputs []string
	// PDF shapes the pdf output; zero fields take the defaults of normalizePDF.
	PDF PDFOptions
	// MarkdownMaxChars caps the markdown output in characters; 0 means
	// DefaultMarkdownMaxChars.
	MarkdownMaxChars int
	// Block keeps sub-resources from loading; the zero value blocks nothing.
	Block Block
	// Emulate, Scroll and Prepare shape the page before capture (emulate.go, prepare.go);
	// zero values change nothing.
	Emulate Emulate
	Scroll  Scroll
	Prepare Prepare
	// Actions run in order after the waits and before any capture (actions.go).
	Actions []Action
	// ActionsTimeout bounds all actions together; 0 means DefaultActionsTimeout.
	ActionsTimeout time.Duration
	// Stabilize > 1 retakes the screenshot until two consecutive captures
	// match, at most this many captures (stabilize.go).
	Stabilize int
	// MaskSelectors: the boxes of matching elements are reported in
	// Result.Masks, for a comparison to leave out (stabilize.go).
	MaskSelectors []string
	// BoxTree records the page's visible elements in Result.BoxTree, for a
	// comparison to explain its changes (boxtree.go).
	BoxTree bool
	// KeepCheckpoints keeps, when the job fails, the images its screenshot
	// actions took before the failure (Error.Result.Images): a suite's journey
	// still compares the checkpoints it reached.
	KeepCheckpoints bool
	// Limits bound the job's images and artifacts (budget.go); zero fields take the defaults.
	Limits Limits
	// State seeds the tab's fresh browser context before the navigation (state.go): an auth
	// profile's login. The clean slate removes it after the job.
	State *StorageState
	// SaveState puts the context's cookies and the final document's storage into
	// Result.State (a login recipe).
	SaveState bool
	// LoggedOut, when set, fails a page that shows it is logged out with CodeLoggedOut.
	LoggedOut *LoggedOut
	// IgnoreHTTPSErrors loads pages whose TLS certificate is not trusted (self-signed,
	// expired, wrong name), for staging sites. Without it such a page fails with
	// CodeCertificateError. The tab that ran such a job is discarded afterwards, so no
	// connection it accepted serves a later job.
	IgnoreHTTPSErrors bool
	// Quality shapes the quality checks and their retry (quality.go).
	Quality QualityOptions
}

// Image is one encoded screenshot.
type Image struct {
	Name        string // file name with extension: name.png or name-001.png
	Index       int    // 1-based segment index (1 for viewport/full)
	ContentType string
	Data        []byte
	Width       int // device pixels
	Height      int // device pixels
	// Y and YCSS are where a segment starts in the captured area (the page, or the element),
	// in device and CSS pixels; 0 for a single image.
	Y, YCSS int
	// RowSigs and RowExact are the row hashes of every row of a PNG segment
	// (diff.RowSignature, diff.RowExact), computed from the rows the segment was cut from;
	// nil for other formats and modes. They are the segment's manifest: an aligned
	// comparison matches pages by them without decoding an image.
	RowSigs, RowExact []uint64
	// Preview is the first segment's thumbnail-sized copy (thumbnail.Scaler), made from the
	// rows the capture had in hand; nil when it had none. The worker encodes it as the
	// segment's thumbnail instead of decoding the PNG again.
	Preview *image.RGBA
	// colours is the sample blank reads, when the capture had the pixels in hand (blank.go).
	colours *colourCounts
}

// Segments describes how a page was cut.
type Segments struct {
	Total     int  `json:"total"`
	Captured  int  `json:"captured"`
	Truncated bool `json:"truncated"`
}

// Result is everything one page load produced.
type Result struct {
	HTTPStatus int
	FinalURL   string
	Title      string
	PageHeight int // CSS px, the document's scroll height at capture time
	Segments   Segments
	Images     []Image
	// Files are the non-screenshot outputs, in the order of Request.Outputs.
	Files []File
	// BlockedRequests counts sub-resource requests the egress guard refused (0 without one).
	BlockedRequests int
	// Blocking counts what the filter lists blocked, by category (filter.go); nil when
	// Request.Block turned no category on.
	Blocking *Blocking
	// WaitErrors lists waits that timed out under BestAttempt.
	WaitErrors []string
	// Log has one entry per emulation step, wait and page edit performed (log.go).
	Log []LogEntry
	// LogTruncated: more than MaxLogEntries steps were logged; the oldest were dropped.
	LogTruncated bool
	// Evaluations holds the values of evaluate actions, in order (actions.go).
	Evaluations []Evaluation
	// Stabilization is set when Request.Stabilize asked for it.
	Stabilization *Stabilization
	// Masks are the boxes of Request.MaskSelectors' elements.
	Masks []Box
	// BoxTree is the page's elements when Request.BoxTree asked for them.
	BoxTree *BoxTree
	// Partial: Request.Timeout ran out before the page was ready (load, network idle, a
	// wait, preparation or actions); the outputs show what had rendered by then.
	Partial bool
	// ContentType is the media type of the main document's response ("application/pdf"
	// for a PDF target).
	ContentType string
	// PDFPages is the page count of a PDF target (0 otherwise).
	PDFPages int
	// Skipped lists asked-for outputs the target cannot give (a PDF or download has no
	// screenshot, html or links), with the reason.
	Skipped []Skipped
	Timings map[string]int64 // milliseconds: navigate, wait, capture, encode, total
	// ScreenshotCalls is the time of each Page.captureScreenshot call of the capture stage
	// that answered, in order: one band of segments (several segments cut from one call), or
	// the one image of modes viewport and full. Inside Timings["capture"], not beside it.
	ScreenshotCalls []time.Duration `json:"-"`
	// State is the login the page holds at the end (Request.SaveState).
	State *StorageState
	// Consent lists the consent banners Prepare.Consent found and what it did (nil when
	// the step did not run).
	Consent []ConsentFound
	// DeepCapture is what Prepare.DeepCapture's walk did (nil when it did not run).
	DeepCapture *DeepCaptureReport
	// Quality is the verdict on how far the capture can be trusted (quality.go).
	Quality *Quality
	// logged counts the entries ever added to Log (some may have been dropped).
	logged int
}

// Stable failure codes. They are part of the public API.
const (
	CodeInvalidURL        = "invalid_url"
	CodeBlockedAddress    = "blocked_address"
	CodeDNSFailure        = "dns_failure"
	CodeConnectionFailed  = "connection_failed"
	CodeNavigationTimeout = "navigation_timeout"
	CodeSelectorTimeout   = "selector_timeout"
	CodeTooTall           = "too_tall"
	CodeBrowserCrashed    = "browser_crashed"
	CodeInternal          = "internal"
	// CodeInvalidSelector: Wait.Selector is not valid CSS (not retryable).
	CodeInvalidSelector = "invalid_selector"
	// CodeInvalidPageRange: PDF.PageRanges is malformed or past the document's last page
	// (not retryable).
	CodeInvalidPageRange = "invalid_page_range"
	// CodeCanceled: the caller's context was canceled or the Browser was closed mid-job
	// (retryable; matches jobs' "canceled").
	CodeCanceled = "canceled"
	// CodeActionFailed: a required action failed (not retryable); the message names the
	// action's index and type.
	CodeActionFailed = "action_failed"
	// CodeBrowserUnavailable: no browser could take the job before it started — a remote
	// endpoint (Config.RemoteURL) refused the connection or answered 429/503. Retryable;
	// the error wraps ErrUnavailable so the queue can retry without counting a failure.
	CodeBrowserUnavailable = "browser_unavailable"

	// Navigation failures named by Chromium's net errors (errors.go, classifyNetError).
	// CodeUnsafePort: a port Chromium never connects to (ERR_UNSAFE_PORT); not retryable.
	// The API rejects such URLs at submit (jobs.UnsafePort); a redirect can still reach one.
	CodeUnsafePort = "unsafe_port"
	// CodeCertificateError: the server's certificate is not trusted (ERR_CERT_*); not
	// retryable. Request.IgnoreHTTPSErrors accepts it.
	CodeCertificateError = "certificate_error"
	// CodeTLSFailed: the TLS handshake failed (ERR_SSL_*: protocol or cipher mismatch,
	// plain HTTP on an https port); not retryable.
	CodeTLSFailed = "tls_failed"
	// CodeBlockedByClient: the browser itself refused the request (ERR_BLOCKED_BY_CLIENT,
	// _ADMINISTRATOR); not retryable.
	CodeBlockedByClient = "blocked_by_client"
	// CodeBlockedByResponse: the response forbids being loaded this way (ERR_BLOCKED_BY_RESPONSE,
	// _CSP, _ORB, ERR_CLEARTEXT_NOT_PERMITTED); not retryable.
	CodeBlockedByResponse = "blocked_by_response"
	// CodeRedirectFailed: too many redirects, or one to a URL the browser refuses; not
	// retryable.
	CodeRedirectFailed = "redirect_failed"
	// CodeInvalidResponse: the server answered something that is not valid HTTP; retryable.
	CodeInvalidResponse = "invalid_response"
	// CodeNavigationFailed: any other net error Chromium reports; retryable. The message
	// quotes Chromium's name for it.
	CodeNavigationFailed = "navigation_failed"
)

// Error is a classified capture failure.
type Error struct {
	Code string
	// Message explains the failure; it is at most MaxMessageBytes (it may quote the page).
	Message   string
	Retryable bool
	Err       error
	// Result is what the job found before it failed: Log (its last entry the failed step,
	// OK false, with its error), Timings of the phases that finished, and the main
	// document's HTTPStatus, FinalURL and ContentType once a response arrived. It has no
	// Images or Files. Nil when the job never reached a tab.
	Result *Result
}

func (e *Error) Error() string {
	if e.Err != nil {
		// Err may quote the page (a rod error with an exception's text): capped like Message.
		return fmt.Sprintf("%s: %s: %s", e.Code, e.Message, CapMessage(e.Err.Error()))
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }
