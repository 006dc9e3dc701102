package capture

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/cdp"
	"github.com/go-rod/rod/lib/proto"
)

// Waiting knobs.
const (
	// DefaultSelectorTimeout applies when Wait.SelectorTimeout is zero.
	DefaultSelectorTimeout = 10 * time.Second
	// NetworkIdleQuiet is how long no request may be in flight for UntilNetworkIdle.
	NetworkIdleQuiet = 500 * time.Millisecond
	// BestAttemptIdleTimeout bounds the network-idle wait when Wait.BestAttempt is set; past
	// it the wait is recorded in Result.WaitErrors and the capture goes ahead. Without
	// BestAttempt the wait is bounded by the job's context only.
	BestAttemptIdleTimeout = 10 * time.Second

	pollInterval = 50 * time.Millisecond
	// documentGrace is how long to wait for the main document's response event, which
	// travels separately from Page.navigate's reply.
	documentGrace = time.Second
)

// Default request values for zero fields.
const (
	DefaultViewportWidth  = 1280
	DefaultViewportHeight = 720
	DefaultJPEGQuality    = 80
)

// normalizeRequest fills defaults and refuses what cannot be captured.
func normalizeRequest(req Request) (Request, error) {
	if strings.TrimSpace(req.URL) == "" {
		return req, newError(CodeInvalidURL, false, nil, "empty URL")
	}
	req.applyDefaults()
	return req, req.checkKnown()
}

// applyDefaults fills in what the request leaves out.
func (req *Request) applyDefaults() {
	if req.Name == "" {
		req.Name = "capture"
	}
	if req.Viewport.Width <= 0 {
		req.Viewport.Width = DefaultViewportWidth
	}
	if req.Viewport.Height <= 0 {
		req.Viewport.Height = DefaultViewportHeight
	}
	if req.Viewport.DeviceScaleFactor <= 0 {
		req.Viewport.DeviceScaleFactor = 1
	}
	if req.Screenshot.Mode == "" {
		req.Screenshot.Mode = ModeSegments
	}
	if req.Screenshot.Format == "" {
		req.Screenshot.Format = FormatPNG
	}
	if req.Screenshot.MaxSegments < 1 || req.Screenshot.MaxSegments > HardMaxSegments {
		req.Screenshot.MaxSegments = NormalizeMaxSegments(float64(req.Screenshot.MaxSegments))
	}
	if req.Screenshot.Format == FormatJPEG && req.Screenshot.Quality <= 0 {
		req.Screenshot.Quality = DefaultJPEGQuality
	}
	req.Screenshot.Quality = min(req.Screenshot.Quality, 100)
	if req.Wait.Until == "" {
		req.Wait.Until = UntilLoad
	}
	if req.Wait.SelectorTimeout <= 0 {
		req.Wait.SelectorTimeout = DefaultSelectorTimeout
	}
}

// checkKnown is an internal error when the request names a mode, format, wait condition,
// output or paper this package does not know (the caller validated them).
func (req *Request) checkKnown() error {
	switch req.Screenshot.Mode {
	case ModeSegments, ModeFull, ModeViewport:
	default:
		return newError(CodeInternal, false, nil, "unknown screenshot mode %q", req.Screenshot.Mode)
	}
	switch req.Screenshot.Format {
	case FormatPNG, FormatJPEG, FormatWebP:
	default:
		return newError(CodeInternal, false, nil, "unknown image format %q", req.Screenshot.Format)
	}
	switch req.Wait.Until {
	case UntilLoad, UntilDOMContentLoaded, UntilNetworkIdle:
	default:
		return newError(CodeInternal, false, nil, "unknown wait condition %q", req.Wait.Until)
	}
	for _, o := range req.Outputs {
		switch o {
		case OutputScreenshot, OutputHTML, OutputText, OutputLinks, OutputMetadata, OutputPDF, OutputMarkdown:
		default:
			return newError(CodeInternal, false, nil, "unknown output %q", o)
		}
	}
	if _, ok := paperMM[req.PDF.Paper]; !ok && req.PDF.Paper != "" {
		return newError(CodeInternal, false, nil, "unknown paper %q", req.PDF.Paper)
	}
	if s := req.PDF.Scale; s != 0 && (s < 0.1 || s > 2) {
		return newError(CodeInternal, false, nil, "PDF scale %g is outside 0.1..2", s)
	}
	return nil
}

// measureJS reads the title (cut in the page, then to MaxMessageBytes by inspect) and height.
const measureJS = `(() => ({
	title: String(document.title).slice(0, 2048),
	height: Math.max(
		document.documentElement ? document.documentElement.scrollHeight : 0,
		document.body ? document.body.scrollHeight : 0),
}))()`

// waitAll runs the load-state, network-idle, selector and delay waits, then the preparation
// waits (fonts, images, hidden selector) and the lazy-load scroll, all bound by ctx.
func (t *tab) waitAll(ctx context.Context, req Request, res *Result) error {
	p := t.page.Context(ctx)
	waitErrs, err := t.wait(ctx, p, req)
	if err != nil {
		return err
	}
	res.WaitErrors = append(res.WaitErrors, waitErrs...)
	prepErrs, err := readyWaits(ctx, p, req.Wait, res) // prepare.go
	if err != nil {
		return err
	}
	res.WaitErrors = append(res.WaitErrors, prepErrs...)
	return scrollPage(p, req.Scroll, req.Viewport.Height, res)
}

// takeDownloads sets the context under which a main-frame PDF or download response is taken
// instead of rendered; stopTakingDownloads clears it.
func (t *tab) takeDownloads(ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dlCtx = ctx
}

func (t *tab) stopTakingDownloads() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dlCtx = nil
}

// navigate sets the viewport and loads the URL. Page.navigate returns once the main document
// commits (or fails).
func (t *tab) navigate(p *rod.Page, req Request) error {
	vp := req.Viewport
	// The tab keeps its metrics between jobs: setting the same ones again would resize and
	// re-raster the page for nothing.
	if vp != t.viewport || req.Emulate.Mobile != t.mobile {
		err := proto.EmulationSetDeviceMetricsOverride{
			Width: vp.Width, Height: vp.Height, DeviceScaleFactor: vp.DeviceScaleFactor, Mobile: req.Emulate.Mobile,
		}.Call(p)
		if err != nil {
			t.viewport = Viewport{}
			return fmt.Errorf("set viewport: %w", err)
		}
		t.viewport, t.mobile = vp, req.Emulate.Mobile
	}
	nav, err := proto.PageNavigate{URL: req.URL}.Call(p)
	if err != nil {
		return fmt.Errorf("navigate %s: %w", req.URL, err)
	}
	if nav.ErrorText == "" {
		return nil
	}
	// A PDF or download taken at the response stage (download.go) fails the navigation on
	// purpose; one a launched Chromium downloads (nativedl.go) aborts it.
	if t.dlDir != "" && strings.Contains(nav.ErrorText, "ERR_ABORTED") {
		if took, err := t.finishDownload(p.GetContext(), req.URL); took || err != nil {
			return err
		}
	} else if st, _ := t.state(); st.download != nil {
		return nil
	}
	// An error status with an empty body: Chromium shows its own error page but the server
	// did answer. That is the target's result, like a 404 with a body.
	if strings.Contains(nav.ErrorText, "ERR_HTTP_RESPONSE_CODE_FAILURE") {
		if st := t.document(p.GetContext(), req.URL); st.sawDocument {
			return nil
		}
	}
	// 204 No Content and 205 Reset Content: Chromium keeps the current (blank) page and
	// reports the navigation as aborted. The server answered; capture the empty page.
	if strings.Contains(nav.ErrorText, "ERR_ABORTED") {
		if st := t.document(p.GetContext(), req.URL); st.sawDocument && noContent(st.status) {
			return nil
		}
	}
	return fmt.Errorf("navigate %s: %w", req.URL, &rod.NavigationError{Reason: nav.ErrorText})
}

// noContent reports the statuses after which Chromium leaves the page as it was (204, 205).
func noContent(status int) bool { return status == 204 || status == 205 }

// egressFailure explains a failed navigation from the guard's record of the document's host
// (a refused CONNECT reaches Chromium only as ERR_TUNNEL_CONNECTION_FAILED), or returns nil.
func (t *tab) egressFailure(rawURL string) *Error {
	if t.egress == nil {
		return nil
	}
	st, _ := t.state()
	target := rawURL
	if st.docRequest != "" {
		target = st.docRequest
	}
	u, err := url.Parse(target)
	if err != nil {
		return nil
	}
	kind, ok := t.egress.Outcome(u.Hostname())
	if !ok {
		return nil
	}
	return egressError(kind, target)
}

// document returns the page state once the main document's response has been seen, or after
// a short grace for http(s) URLs whose response event is still on its way.
func (t *tab) document(ctx context.Context, rawURL string) pageState {
	deadline := time.Now().Add(documentGrace)
	for {
		st, _ := t.state()
		httpURL := strings.HasPrefix(rawURL, "http://") || strings.HasPrefix(rawURL, "https://")
		if st.sawDocument || !httpURL || time.Now().After(deadline) {
			return st
		}
		if sleep(ctx, 10*time.Millisecond) != nil {
			return st
		}
	}
}

// wait applies req.Wait: the load state, network idle, the selector, then the delay.
func (t *tab) wait(ctx context.Context, p *rod.Page, req Request) ([]string, error) {
	w := req.Wait
	var waitErrs []string

	// One evaluation that resolves on the event, rather than polling readyState: polling
	// costs a round trip per interval and half an interval of latency per page.
	ready := `document.readyState === "complete"`
	if w.Until == UntilDOMContentLoaded {
		ready = `document.readyState !== "loading"`
	}
	awaitReady := `new Promise(resolve => {
		const check = () => { if (` + ready + `) { resolve(true); return true; } return false; };
		if (check()) return;
		document.addEventListener("readystatechange", check);
		addEventListener("load", check);
	})`
	if err := poll(ctx, pollInterval, func() (bool, error) {
		var ok bool
		err := evalJSON(p, awaitReady, &ok)
		return ok, err
	}); err != nil {
		return nil, fmt.Errorf("wait for %s: %w", w.Until, err)
	}

	if w.Until == UntilNetworkIdle {
		idleCtx, cancel := ctx, context.CancelFunc(func() {})
		if w.BestAttempt {
			idleCtx, cancel = context.WithTimeout(ctx, BestAttemptIdleTimeout)
		}
		err := poll(idleCtx, pollInterval, func() (bool, error) {
			st, n := t.state()
			return n == 0 && time.Since(st.lastNet) >= cmp.Or(w.NetworkIdle, NetworkIdleQuiet), nil
		})
		cancel()
		switch {
		case err != nil && w.BestAttempt && ctx.Err() == nil:
			_, n := t.state()
			waitErrs = append(waitErrs, fmt.Sprintf("network not idle after %s (%d requests in flight)", BestAttemptIdleTimeout, n))
		case err != nil:
			return nil, fmt.Errorf("wait for network idle: %w", err)
		}
	}

	if w.Selector != "" {
		msg, err := waitSelector(ctx, p, w.Selector, false, w.SelectorTimeout)
		if err == nil {
			err = selectorTimedOut(msg, w.BestAttempt, &waitErrs)
		}
		if err != nil {
			return nil, err
		}
	}

	if w.Delay > 0 {
		if err := sleep(ctx, w.Delay); err != nil {
			return nil, fmt.Errorf("delay: %w", err)
		}
	}
	return waitErrs, nil
}

// selectorTimedOut turns a selector wait's timeout message into selector_timeout, or with
// bestAttempt records it in waitErrs and lets the capture go ahead.
func selectorTimedOut(msg string, bestAttempt bool, waitErrs *[]string) error {
	switch {
	case msg == "":
		return nil
	case !bestAttempt:
		return newError(CodeSelectorTimeout, false, nil, "%s", msg)
	}
	*waitErrs = append(*waitErrs, CapMessage(msg))
	return nil
}

// waitSelector waits until selector matches a visible element or, with hidden, until no
// match is visible. It returns a message when the timeout passes first, an error when the job
// itself ends or the selector is invalid.
func waitSelector(ctx context.Context, p *rod.Page, selector string, hidden bool, timeout time.Duration) (string, error) {
	js := `(() => {
		let els;
		try { els = document.querySelectorAll(` + jsString(selector) + `); } catch (e) { return "invalid"; }
		if (els.length === 0) return "missing";
		for (const el of els) {
			const s = getComputedStyle(el), r = el.getBoundingClientRect();
			if (s.display !== "none" && s.visibility !== "hidden" && r.width > 0 && r.height > 0) return "visible";
		}
		return "hidden";
	})()`
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	state := ""
	err := poll(sctx, 100*time.Millisecond, func() (bool, error) {
		if err := evalJSON(p.Context(ctx), js, &state); err != nil {
			return false, err
		}
		done := state == "visible"
		if hidden {
			done = state == "missing" || state == "hidden"
		}
		return done || state == "invalid", nil
	})
	switch {
	case err == nil && state == "invalid":
		return "", newError(CodeInvalidSelector, false, nil, "%q is not a valid CSS selector", selector)
	case err == nil:
		return "", nil
	case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) && hidden:
		return fmt.Sprintf("selector %q still visible after %s", selector, timeout), nil
	case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("selector %q not visible after %s (%s)", selector, timeout, state), nil
	}
	return "", fmt.Errorf("wait for selector %q: %w", selector, err)
}

// poll calls check every interval until it reports true, fails, or ctx ends. Errors from a
// JavaScript context replaced by a navigation are retried.
func poll(ctx context.Context, interval time.Duration, check func() (bool, error)) error {
	for {
		ok, err := check()
		if err == nil && ok {
			return nil
		}
		if err != nil && !transientEvalError(err) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if err := sleep(ctx, interval); err != nil {
			return err
		}
	}
}

// transientEvalError reports an evaluation that failed because the document was being replaced
// (its context destroyed, or the evaluation cut off by a navigation): the next try reaches the
// new document.
func transientEvalError(err error) bool {
	var ce *cdp.Error
	if errors.As(err, &ce) {
		return ce.Code == cdp.ErrCtxDestroyed.Code &&
			(ce.Message == cdp.ErrCtxDestroyed.Message || ce.Message == cdp.ErrCtxNotFound.Message) ||
			navigatingError(err)
	}
	return false
}

// navigatingError reports an evaluation cut off by a navigation of the page.
func navigatingError(err error) bool {
	var ce *cdp.Error
	return errors.As(err, &ce) && ce.Code == -32000 && strings.Contains(ce.Message, "navigated or closed")
}

func sleep(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// exceptionText is what the page's exception says: its description (the thrown value and
// stack), else the short text.
func exceptionText(d *proto.RuntimeExceptionDetails) string {
	if ex := d.Exception; ex != nil && ex.Description != "" {
		return ex.Description
	}
	return d.Text
}

// evalJSON evaluates a JavaScript expression in the page's main world and decodes its value.
func evalJSON(p *rod.Page, expr string, out any) error {
	res, err := proto.RuntimeEvaluate{Expression: expr, ReturnByValue: true, AwaitPromise: true}.Call(p)
	if err != nil {
		return err
	}
	if res.ExceptionDetails != nil {
		return exceptionError(exceptionText(res.ExceptionDetails))
	}
	data, err := json.Marshal(res.Result.Value)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}
