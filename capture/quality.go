package capture

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
)

// Quality verdicts: every capture says whether it can be trusted (Result.Quality), from
// checks on the same load. A page still showing a loading indicator, with images or web
// fonts that failed, a bot-check interstitial, or a screenshot of nearly one colour is
// "suspect". A suspect capture is retried once, on the same load, after escalated waits
// (network idle, fonts, images, the loading indicators gone), unless
// QualityOptions.NoRetry. A bot-check page that does not clear within
// QualityOptions.ChallengeWait fails with CodeChallengeBlocked: snapq never tries to solve
// a challenge.

// CodeChallengeBlocked: the page is a bot-check interstitial (Cloudflare's "Just a moment",
// a Turnstile/hCaptcha/reCAPTCHA challenge) that did not clear within the bounded wait. Not
// retryable.
const CodeChallengeBlocked = "challenge_blocked"

// Verdicts.
const (
	VerdictOK      = "ok"
	VerdictSuspect = "suspect"
)

// Reasons of a suspect verdict (Quality.Reasons). They are part of the public API.
const (
	ReasonBlank         = "blank"             // the screenshots are nearly one colour
	ReasonLoading       = "loading_indicator" // a spinner, skeleton, progress bar or aria-busy element is visible
	ReasonFailedImages  = "failed_images"     // visible images failed to load
	ReasonFailedFonts   = "failed_fonts"      // web fonts failed to load (document.fonts)
	ReasonChallenge     = "challenge"         // a bot-check interstitial
	ReasonConsoleErrors = "console_errors"    // at least SuspectConsoleErrors errors were logged
)

// Quality defaults.
const (
	DefaultQualityRetryWait = 5 * time.Second  // bound of the escalated waits of a retry
	DefaultChallengeWait    = 15 * time.Second // bound of the wait for a challenge to clear
	// SuspectConsoleErrors is how many console errors and uncaught exceptions make a capture
	// suspect by themselves; fewer are only counted (real sites log a few).
	SuspectConsoleErrors = 20
	// blankShare is the share of sampled pixels of one colour that makes a capture blank.
	blankShare = 0.997
)

// QualityOptions shape the quality checks of a Request. The zero value retries a suspect
// capture once with the default bounds.
type QualityOptions struct {
	NoRetry         bool `json:"no_retry,omitempty"`          // report a suspect capture without retrying it
	RetryWaitMS     int  `json:"retry_wait_ms,omitempty"`     // 0 = DefaultQualityRetryWait
	ChallengeWaitMS int  `json:"challenge_wait_ms,omitempty"` // 0 = DefaultChallengeWait
}

func (o QualityOptions) retryWait() time.Duration {
	if o.RetryWaitMS > 0 {
		return time.Duration(o.RetryWaitMS) * time.Millisecond
	}
	return DefaultQualityRetryWait
}

func (o QualityOptions) challengeWait() time.Duration {
	if o.ChallengeWaitMS > 0 {
		return time.Duration(o.ChallengeWaitMS) * time.Millisecond
	}
	return DefaultChallengeWait
}

// Quality is the verdict on one capture.
type Quality struct {
	Verdict string   `json:"verdict"`           // ok | suspect
	Reasons []string `json:"reasons,omitempty"` // Reason* codes, when suspect
	// ConsoleErrors counts console.error calls and uncaught exceptions of the main frame.
	ConsoleErrors int `json:"console_errors"`
	// Retried: the first checks found the capture suspect and it was retaken after
	// escalated waits; Reasons are those of the retake.
	Retried bool `json:"retried,omitempty"`
}

// consoleCountJS runs in every new document of a tab (newTab): it counts console.error calls and
// uncaught errors in a non-enumerable window property the checks read.
const consoleCountJS = `(() => { try {
	let n = 0;
	Object.defineProperty(window, "__snapqConsoleErrors", {get: () => n, configurable: true});
	const orig = console.error;
	console.error = function (...a) { n++; return orig.apply(this, a); };
	addEventListener("error", e => { if (!e.target || e.target === window) n++; }, true);
	addEventListener("unhandledrejection", () => { n++; });
} catch (e) {} })()`

// pageChecks is what qualityJS reads from the page.
type pageChecks struct {
	Challenge     string `json:"challenge"` // why the page looks like a challenge, "" if not
	Loading       string `json:"loading"`   // the first visible loading indicator, "" if none
	FailedImages  int    `json:"failedImages"`
	FailedFonts   int    `json:"failedFonts"`
	ConsoleErrors int    `json:"consoleErrors"`
}

// qualityJS checks the page. Widgets that can sit on an ordinary page (a captcha on a
// form) count as a challenge only when the page has little else on it.
const qualityJS = `(() => {
	const visible = el => {
		const cs = getComputedStyle(el);
		if (cs.display === "none" || cs.visibility === "hidden" || Number(cs.opacity) < 0.05) return false;
		const r = el.getBoundingClientRect();
		return r.width >= 8 && r.height >= 8 && r.bottom > 0 && r.right > 0;
	};
	const describe = el => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
		(typeof el.className === "string" && el.className.trim() ? "." + el.className.trim().split(/\s+/).slice(0, 2).join(".") : "");
	// innerText lays out and walks the whole page: read only when a widget is found.
	const little = () => (document.body ? (document.body.innerText || "") : "").trim().length < 1500;
	let challenge = "";
	const title = String(document.title || "");
	if (/^\s*(just a moment|attention required|checking your browser|verify(ing)? you are (a )?human|are you a (robot|human)|security check|one moment, please|please wait while we verify|ddos-guard|human verification|bot verification|pardon our interruption|access to this page has been denied)/i.test(title)) {
		challenge = "title " + JSON.stringify(title.slice(0, 80));
	}
	if (!challenge) {
		const marker = document.querySelector("#challenge-form, #challenge-running, #challenge-stage, #cf-challenge-running, #cf-please-wait, #challenge-error-text, #px-captcha");
		if (marker) challenge = describe(marker);
	}
	if (!challenge) {
		const frame = Array.from(document.querySelectorAll("iframe")).find(f =>
			/challenges\.cloudflare\.com|hcaptcha\.com|recaptcha\/(api2|enterprise)|captcha-delivery\.com|turnstile/i.test(f.src || ""));
		const widget = document.querySelector(".cf-turnstile, .h-captcha, .g-recaptcha, [data-sitekey]");
		if (frame && little()) challenge = "frame " + (frame.src || "").split("?")[0].slice(0, 100);
		else if (widget && little()) challenge = describe(widget);
	}
	let loading = "";
	for (const el of document.querySelectorAll('[aria-busy="true"], [role="progressbar"], [class*="spinner" i], [class*="skeleton" i], [class*="shimmer" i], [class*="loader" i], [class*="loading" i]')) {
		if (el === document.body || el === document.documentElement) continue;
		if (visible(el)) { loading = describe(el); break; }
	}
	let failedImages = 0;
	for (const img of document.images) {
		if ((img.currentSrc || img.src) && img.complete && img.naturalWidth === 0 && visible(img)) failedImages++;
	}
	let failedFonts = 0;
	if (document.fonts) document.fonts.forEach(f => { if (f.status === "error") failedFonts++; });
	return {challenge, loading, failedImages, failedFonts, consoleErrors: window.__snapqConsoleErrors || 0};
})()`

// checkPage reads the page's checks; a page that cannot be read (it navigated away) reads as
// no findings.
func checkPage(p *rod.Page) (pageChecks, error) {
	var c pageChecks
	err := evalJSON(p, qualityJS, &c)
	return c, err
}

// reasons are the suspect reasons of the page checks, for a request that blocks res types.
func (c pageChecks) reasons(req Request) []string {
	var r []string
	if c.Challenge != "" {
		r = append(r, ReasonChallenge)
	}
	if c.Loading != "" {
		r = append(r, ReasonLoading)
	}
	if c.FailedImages > 0 && !slices.Contains(req.Block.ResourceTypes, ResourceImage) {
		r = append(r, ReasonFailedImages)
	}
	if c.FailedFonts > 0 && !slices.Contains(req.Block.ResourceTypes, ResourceFont) {
		r = append(r, ReasonFailedFonts)
	}
	if c.ConsoleErrors >= SuspectConsoleErrors {
		r = append(r, ReasonConsoleErrors)
	}
	return r
}

// describe is the log excerpt of the checks.
func (c pageChecks) describe() string {
	var parts []string
	if c.Challenge != "" {
		parts = append(parts, "challenge: "+c.Challenge)
	}
	if c.Loading != "" {
		parts = append(parts, "loading indicator "+c.Loading)
	}
	if c.FailedImages > 0 {
		parts = append(parts, fmt.Sprintf("%d failed images", c.FailedImages))
	}
	if c.FailedFonts > 0 {
		parts = append(parts, fmt.Sprintf("%d failed fonts", c.FailedFonts))
	}
	parts = append(parts, fmt.Sprintf("%d console errors", c.ConsoleErrors))
	return strings.Join(parts, "; ")
}

// awaitChallenge waits, up to the request's challenge wait, for a challenge page to clear
// (a challenge that passes navigates to the site). It fails with CodeChallengeBlocked when it
// does not; it never interacts with the page.
func awaitChallenge(ctx context.Context, p *rod.Page, req Request, c pageChecks, res *Result) (pageChecks, error) {
	start := time.Now()
	bound := req.Quality.challengeWait()
	deadline := start.Add(bound)
	for c.Challenge != "" {
		if time.Now().After(deadline) || ctx.Err() != nil {
			err := newError(CodeChallengeBlocked, false, nil,
				"the page is a bot-check interstitial (%s) that did not clear within %s; snapq does not solve challenges",
				c.Challenge, bound)
			logStep(res, "quality.challenge", c.Challenge, start, err, "")
			return c, err
		}
		select {
		case <-ctx.Done():
			continue // the page's budget ran out: blocked, unless the job itself ended
		case <-time.After(250 * time.Millisecond):
		}
		if n, err := checkPage(p); err == nil {
			c = n
		} // else: navigating; read again
	}
	logStep(res, "quality.challenge", "", start, nil, "cleared")
	return c, nil
}

// escalate runs the escalated waits of a quality retry, bounded by the request's retry wait:
// a network idle of a second, fonts, every image, then the loading indicators gone.
func escalate(ctx context.Context, t *tab, p *rod.Page, req Request, res *Result) {
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, req.Quality.retryWait())
	defer cancel()
	wp := p.Context(wctx)
	_ = t.waitNetworkIdle(wctx, time.Second)
	_ = evalJSON(wp, `document.fonts ? document.fonts.ready.then(() => true) : true`, new(bool))
	_, _ = waitImages(wp, false)
	for wctx.Err() == nil {
		c, err := checkPage(wp)
		if err == nil && c.Loading == "" {
			break
		}
		select {
		case <-wctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	logStep(res, "quality.retry", "", start, nil, "escalated waits: network idle 1s, fonts, images, loading indicators")
}

// addConsoleCounter installs consoleCountJS for every new document of the tab.
func addConsoleCounter(p *rod.Page) (proto.PageScriptIdentifier, error) {
	res, err := proto.PageAddScriptToEvaluateOnNewDocument{Source: consoleCountJS}.Call(p)
	if err != nil {
		return "", err
	}
	return res.Identifier, nil
}

// waitNetworkIdle waits until no request has been in flight for quiet, bounded by ctx.
func (t *tab) waitNetworkIdle(ctx context.Context, quiet time.Duration) error {
	return poll(ctx, pollInterval, func() (bool, error) {
		st, n := t.state()
		return n == 0 && time.Since(st.lastNet) >= quiet, nil
	})
}

// quality runs the page checks after the page is inspected: a challenge is waited out or
// fails the job; other findings get one retry after escalated waits. The verdict is given
// with the outputs, once the screenshots can be checked too (verdict).
func (j *job) quality() *Error {
	start := time.Now()
	c, err := checkPage(j.p)
	if err != nil || len(c.reasons(j.req)) > 0 {
		logStep(j.res, "quality", "", start, err, c.describe()) // an ordinary page's log stays as it was
	}
	if err != nil {
		if j.ctx.Err() != nil {
			return j.fail(phaseWait, err)
		}
		j.res.Quality = &Quality{Verdict: VerdictOK}
		return nil // a page that cannot be checked is not failed for it
	}
	j.res.Quality = &Quality{Verdict: VerdictOK}
	if c.Challenge != "" {
		if c, err = awaitChallenge(j.loadCtx, j.p, j.req, c, j.res); err != nil {
			var ce *Error
			if errors.As(err, &ce) && j.ctx.Err() == nil {
				return ce
			}
			return j.fail(phaseWait, err)
		}
		// The challenge cleared: the site loaded in its place; measure it again.
		_ = j.t.waitNetworkIdle(j.ctx, 300*time.Millisecond)
		if e := j.inspect(); e != nil {
			return e
		}
	}
	if len(c.reasons(j.req)) > 0 && j.canRetry() {
		j.res.Quality.Retried = true
		escalate(j.loadCtx, j.t, j.p, j.req, j.res)
		if n, err := checkPage(j.p); err == nil {
			c = n
		}
		var m struct {
			Height float64 `json:"height"`
		}
		if err := evalJSON(j.p, measureJS, &m); err == nil {
			j.res.PageHeight = int(m.Height)
		}
	}
	j.checks = c
	return nil
}

// canRetry reports whether a suspect capture may be retaken: asked for, not yet done, the
// page's budget not spent (escalated waits never eat the capture's grace), and not an error
// status.
func (j *job) canRetry() bool {
	return !j.req.Quality.NoRetry && (j.res.Quality == nil || !j.res.Quality.Retried) && !j.res.Partial && j.loadCtx.Err() == nil &&
		j.res.HTTPStatus < 400 // an error page is what the server sent: waiting longer changes nothing
}

// verdict sets Result.Quality from the last page checks and whether the screenshots are
// blank.
func (j *job) verdict(isBlank bool) {
	q := j.res.Quality
	if q == nil {
		q = &Quality{}
		j.res.Quality = q
	}
	q.Reasons = j.checks.reasons(j.req)
	if isBlank {
		q.Reasons = append([]string{ReasonBlank}, q.Reasons...)
	}
	q.ConsoleErrors = j.checks.ConsoleErrors
	q.Verdict = VerdictOK
	if len(q.Reasons) > 0 {
		q.Verdict = VerdictSuspect
	}
}
