package capture

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
)

// job is one Request run on a tab: the contexts it runs under, what it was asked and what it
// has found so far. run calls its phases in order; each returns nil or a classified *Error.
type job struct {
	t *tab
	// parent is the caller's context: its deadline (Request.Timeout plus CaptureGrace) and
	// its cancel decide navigation_timeout and canceled.
	parent context.Context
	// ctx is parent, also ended, with the reason as its cause, when the renderer crashes, the
	// tab goes away or the browser dies, so no call waits for the deadline in those cases.
	// The outputs run under it.
	ctx context.Context
	// loadCtx is ctx ended at the page's budget (the end of Request.Timeout, when set): the
	// navigation, waits, preparation waits and actions run under it.
	loadCtx context.Context
	p       *rod.Page // the tab's page on ctx
	req     Request
	cfg     Config
	res     *Result
	seeded  proto.PageScriptIdentifier // Request.State's storage script, removed when the job ends
	checks  pageChecks                 // the quality checks of the page before the outputs
}

// run is one job on the tab: navigate, wait, prepare, act, inspect, then take the outputs.
// budget, when not zero, is the end of Request.Timeout: the navigation, waits, preparation
// waits and actions run until it; past it the outputs are taken of what has rendered
// (Result.Partial) within the grace parent still has (see CaptureGrace).
func (t *tab) run(parent context.Context, req Request, cfg Config, budget time.Time) (*Result, error) {
	j, done := t.newJob(parent, req, cfg, budget)
	defer done()
	t.private = t.private || req.State != nil || req.SaveState

	if err := j.step("navigate", j.navigate); err != nil {
		return nil, err
	}
	if st, _ := t.state(); st.download != nil {
		// A PDF or a download: nothing was rendered, the outputs come from its bytes.
		return j.result(j.step("capture", func() *Error { return j.downloadOutputs(st) }))
	}
	if err := j.step("navigate", j.checkEgress); err != nil {
		return nil, err
	}
	for _, s := range []struct {
		name string
		run  func() *Error
	}{{"auth", j.loggedOut}, {"wait", j.wait}, {"prepare", j.prepare}, {"actions", j.actions}, {"auth", j.loggedOut},
		{"inspect", j.inspect}, {"quality", j.quality}} {
		if err := j.timed(s.name, s.run); err != nil {
			return nil, err
		}
	}
	if req.SaveState {
		if err := j.timed("auth", j.saveState); err != nil {
			return nil, err
		}
	}
	// Every output reads this one load.
	return j.result(j.step("capture", j.outputs))
}

// timed is step, adding the phase's time to Result.Timings[name] (each phase its own key:
// the timings are exclusive).
func (j *job) timed(name string, run func() *Error) *Error {
	start := time.Now()
	err := j.step(name, run)
	j.res.Timings[name] += time.Since(start).Milliseconds()
	return err
}

// step runs one phase of the job. When it fails, the log gets a last entry for it (unless the
// phase's own last entry already is the failure, as a failed action's is) and the error
// carries what the job found so far (Error.Result).
func (j *job) step(name string, run func() *Error) *Error {
	start, logged := time.Now(), j.res.logged
	err := run()
	if err == nil {
		return nil
	}
	if n := len(j.res.Log); j.res.logged == logged || j.res.Log[n-1].OK {
		actionLog{j.res}.add(LogEntry{Index: len(j.res.Log), Type: name, OK: false,
			MS: time.Since(start).Milliseconds(), Error: err.Message})
	}
	err.Result = j.failedResult()
	return err
}

// failedResult is a copy of what the job found before it failed, without images (unless
// the request keeps its checkpoints: then the images of the screenshot actions that ran) or
// files, with the main document's status and URL when a response arrived.
func (j *job) failedResult() *Result {
	r := *j.res
	if !j.req.KeepCheckpoints {
		r.Images = nil
	}
	r.Files = nil
	r.Log = slices.Clone(r.Log)
	r.Timings = maps.Clone(r.Timings)
	if st, _ := j.t.state(); st.sawDocument {
		r.HTTPStatus = cmp.Or(r.HTTPStatus, st.status)
		r.FinalURL = cmp.Or(r.FinalURL, st.docURL)
		r.ContentType = cmp.Or(r.ContentType, st.contentType)
	}
	return &r
}

// newJob starts a job on t; done releases its contexts.
func (t *tab) newJob(parent context.Context, req Request, cfg Config, budget time.Time) (*job, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	stop := context.AfterFunc(t.ctx, func() { cancel(context.Cause(t.ctx)) })
	loadCtx, cancelLoad := ctx, context.CancelFunc(func() {})
	if !budget.IsZero() {
		loadCtx, cancelLoad = context.WithDeadline(ctx, budget)
	}
	j := &job{t: t, parent: parent, ctx: ctx, loadCtx: loadCtx, p: t.page.Context(ctx), req: req, cfg: cfg,
		res: &Result{Timings: map[string]int64{}}}
	t.beginJob()
	return j, func() {
		if j.seeded != "" {
			t.scripts = append(t.scripts, j.seeded) // removed by reset (tab.go)
		}
		cancelLoad()
		stop()
		cancel(nil)
	}
}

// result is the job's Result, or err when it is not nil.
func (j *job) result(err *Error) (*Result, error) {
	if err != nil {
		return nil, err
	}
	return j.res, nil
}

// spent reports that the page's budget, not the job, has ended.
func (j *job) spent() bool { return j.loadCtx.Err() != nil && j.ctx.Err() == nil }

// fail classifies err, which happened while in ph.
func (j *job) fail(ph phase, err error) *Error { return classify(j.parent, j.ctx, ph, err) }

// navigate applies the request's blocking and emulation, then loads the URL under the page's
// budget, taking a main-frame PDF or download instead of rendering it (download.go).
func (j *job) navigate() *Error {
	start := time.Now()
	if err := j.t.applyBlock(j.p, j.req.Block); err != nil { // block.go
		return j.fail(phaseNavigate, err)
	}
	if err := j.t.applyEmulation(j.p, j.req, j.res); err != nil { // emulate.go
		return j.fail(phaseNavigate, err)
	}
	id, err := j.t.seedState(j.p, j.req.State, j.res) // state.go
	j.seeded = id
	if err != nil {
		return j.fail(phaseNavigate, err)
	}
	if j.req.IgnoreHTTPSErrors && !j.t.insecure {
		j.t.insecure = true // set before the call: a tab that may have it on is never reused
		if err := (proto.SecuritySetIgnoreCertificateErrors{Ignore: true}).Call(j.p); err != nil {
			return j.fail(phaseNavigate, fmt.Errorf("ignore certificate errors: %w", err))
		}
		logStep(j.res, "ignore_https_errors", "", start, nil, "")
	}
	j.t.takeDownloads(j.loadCtx)
	err = j.t.navigate(j.t.page.Context(j.loadCtx), j.req)
	j.t.stopTakingDownloads()
	if err != nil {
		return j.navigationError(err)
	}
	j.res.Timings["navigate"] = time.Since(start).Milliseconds()
	return nil
}

// navigationError explains a failed navigation: the egress guard refused the document's host,
// the budget ran out during a download or before anything arrived, or the network failed.
func (j *job) navigationError(err error) *Error {
	if e := j.t.egressFailure(j.req.URL); e != nil {
		return e
	}
	if st, _ := j.t.state(); j.spent() && st.download != nil {
		return newError(CodeNavigationTimeout, true, context.DeadlineExceeded,
			"the target's %s download did not finish within the %s budget", typeName(st.download), j.req.Timeout)
	}
	if j.spent() {
		return newError(CodeNavigationTimeout, true, context.DeadlineExceeded,
			"nothing arrived from the target within the %s budget", j.req.Timeout)
	}
	return j.fail(phaseNavigate, err)
}

// downloadOutputs builds the outputs of the PDF or download in st from its bytes
// (download.go).
func (j *job) downloadOutputs(st pageState) *Error {
	start := time.Now()
	out, err := downloadResult(j.ctx, j.req, st.download, st.redirects, j.res, j.t.inst.cfg.Markup)
	if err != nil {
		return j.fail(phaseCapture, err) // already an *Error, passed through
	}
	j.res = out
	j.res.Timings["capture"] = time.Since(start).Milliseconds()
	j.recordBlocked()
	return nil
}

// checkEgress fails the job when the egress guard, not the target, answered the main
// document: there is nothing to capture.
func (j *job) checkEgress() *Error {
	if st := j.t.document(j.ctx, j.req.URL); st.egress != "" {
		return egressError(st.egress, st.docURL)
	}
	return nil
}

// wait runs the load-state, network-idle, selector and delay waits, the preparation waits
// and the lazy-load scroll under the page's budget. When the budget runs out here, the job
// goes on with what has rendered.
func (j *job) wait() *Error {
	ctx, stop := j.t.untilDocumentCut(j.loadCtx)
	err := j.t.waitAll(ctx, j.req, j.res)
	stop()
	if st, _ := j.t.state(); st.docCut != "" {
		return documentCutError(st.docCut)
	}
	if err := j.partial("before the page was ready", err); err != nil {
		return j.readyError(err)
	}
	return nil
}

// prepare applies the page edits (prepare.go) under ctx: they run on a partial page too.
func (j *job) prepare() *Error {
	j.hideFiltered() // filter.go
	if err := editPage(j.t.page.Context(j.ctx), j.req.Prepare, j.res); err != nil {
		return j.readyError(err)
	}
	return nil
}

// actions runs the request's actions (actions.go) under the page's budget, or records that
// they were skipped when the budget already ran out. They run before the page is inspected,
// so a navigation they cause is checked by the egress lock like any other.
func (j *job) actions() *Error {
	if j.res.Partial {
		if len(j.req.Actions) > 0 {
			j.res.WaitErrors = append(j.res.WaitErrors, fmt.Sprintf("%d actions were skipped", len(j.req.Actions)))
		}
		return nil
	}
	if err := j.partial("during the actions", j.t.runActions(j.loadCtx, j.req, j.cfg, j.res)); err != nil {
		return j.readyError(err)
	}
	return nil
}

// partial absorbs err when it is the page's budget running out during step: res is marked
// Partial and the outputs show what had rendered. Any other error, and nil, is returned as
// it is.
func (j *job) partial(step string, err error) error {
	var ce *Error
	if err == nil || errors.As(err, &ce) || !j.spent() {
		return err
	}
	j.res.Partial = true
	j.res.WaitErrors = append(j.res.WaitErrors, fmt.Sprintf(
		"the %s budget ran out %s; the outputs show what had rendered by then", j.req.Timeout, step))
	return nil
}

// readyError classifies an error of the waits, page edits or actions: a navigation the
// egress guard refused wins over the step that waited for it, then a required action's
// failure, then the job's own end.
func (j *job) readyError(err error) *Error {
	if st, _ := j.t.state(); st.egress != "" {
		if e := egressError(st.egress, st.docURL); e != nil {
			return e
		}
	}
	var f *actionFailure
	if errors.As(err, &f) && j.ctx.Err() == nil {
		return newError(CodeActionFailed, false, nil, "action %d (%s) failed: %v", f.index, f.typ, f.err)
	}
	return j.fail(phaseWait, err)
}

// inspect measures the page (title, height) and reads what its document is now: it refuses a
// document that is not the web or that the egress guard answered, and records the status,
// content type and final URL.
func (j *job) inspect() *Error {
	var m struct {
		Title  string  `json:"title"`
		Height float64 `json:"height"`
	}
	if err := evalJSON(j.p, measureJS, &m); err != nil {
		return j.fail(phaseWait, fmt.Errorf("measure page: %w", err))
	}
	j.res.Title = CapMessage(m.Title)
	j.res.PageHeight = int(m.Height)
	st := j.t.document(j.ctx, j.req.URL)
	if err := notWeb(st); err != nil {
		return err
	}
	if st.egress != "" {
		// A redirect or script moved the page to a destination the guard refused.
		if e := egressError(st.egress, st.docURL); e != nil {
			return e
		}
	}
	j.res.HTTPStatus = st.status
	j.res.ContentType = st.contentType
	j.res.FinalURL = cmp.Or(st.docURL, st.frameURL, j.req.URL)
	return nil
}

// notWeb refuses a main frame that shows a document other than http(s), Chromium's error
// page, or the blank page a 204 or 205 leaves. Chromium refuses file:, chrome: and
// view-source: navigations from web pages; this is the second lock: never capture a document
// that is not the web.
func notWeb(st pageState) *Error {
	u, err := url.Parse(st.frameURL)
	if err != nil || st.frameURL == "" || u.Scheme == "http" || u.Scheme == "https" || u.Scheme == "chrome-error" ||
		(noContent(st.status) && st.frameURL == "about:blank") {
		return nil
	}
	return newError(CodeBlockedAddress, false, nil, "the page navigated to a %s: URL, which snapq does not capture", u.Scheme)
}

// outputs takes every asked-for output of the load under ctx, so past the page's budget they
// still get the job's grace. Screenshots come first: printing to PDF switches to print media,
// and nothing else may change what they show.
func (j *job) outputs() *Error {
	start := time.Now()
	var encode time.Duration
	if j.req.wants(OutputScreenshot) {
		shots, err := shootStable(j.ctx, j.p, j.req, j.res, j.cfg.CallTimeout) // stabilize.go, element.go
		if err != nil {
			return j.fail(phaseCapture, err)
		}
		j.res.ScreenshotCalls = append(j.res.ScreenshotCalls, shots.calls...)
		if blank(shots.images) && j.canRetry() {
			// A retake after escalated waits (quality.go); the checks are read again too.
			j.res.Quality.Retried = true
			logStep(j.res, "quality", "", time.Now(), nil, "the screenshots are nearly one colour")
			escalate(j.loadCtx, j.t, j.p, j.req, j.res)
			if c, err := checkPage(j.p); err == nil {
				j.checks = c
			}
			if again, err := shootStable(j.ctx, j.p, j.req, j.res, j.cfg.CallTimeout); err == nil {
				shots = again
				j.res.ScreenshotCalls = append(j.res.ScreenshotCalls, again.calls...)
			}
		}
		j.verdict(blank(shots.images))
		j.res.Images = append(j.res.Images, shots.images...) // after any named action screenshots
		j.res.Segments = shots.segments
		encode = shots.encode
	} else {
		j.verdict(false)
	}
	if err := deepCapture(j.ctx, j.p, j.req, j.res); err != nil { // deep.go, after the screenshots
		return j.fail(phaseCapture, err)
	}
	files, err := j.t.pageOutputs(j.p, j.req, j.res) // outputs.go
	if err != nil {
		return j.fail(phaseCapture, err)
	}
	if j.req.wants(OutputPDF) {
		f, err := printPDF(j.ctx, j.p, j.req, j.cfg.CallTimeout)
		if err != nil {
			return j.fail(phaseCapture, err)
		}
		files = append(files, f)
	}
	j.res.Files = sortFiles(files, j.req.Outputs)
	if err := checkArtifacts(j.req, j.res); err != nil { // budget.go
		return err
	}
	j.recordBlocked()
	j.res.Timings["encode"] = encode.Milliseconds()
	j.res.Timings["capture"] = (time.Since(start) - encode).Milliseconds()
	return nil
}

// recordBlocked copies the egress guard's list of refused requests into the result.
func (j *job) recordBlocked() {
	if j.t.egress != nil {
		j.res.BlockedRequests = j.t.egress.Blocked()
	}
	j.recordFiltered(j.t.page.Context(j.ctx)) // filter.go
}
