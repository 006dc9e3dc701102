package capture

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
)

// tab is one capture slot's long-lived page, alone in its own browser context. Reusing it keeps
// the renderer warm (a new context per page ran at 0.32× of a reused tab); giving it its own
// context keeps concurrent screenshots from freezing each other and lets the clean slate clear
// cookies for exactly this slot.
type tab struct {
	inst      *instance
	contextID proto.BrowserBrowserContextID
	page      *rod.Page // base page; every call goes through page.Context(ctx)
	jobs      int       // jobs run on this tab (touched only by the job holding it)
	emulated  string    // emulationKey of the overrides in force (noEmulation on a new tab)
	viewport  Viewport  // device metrics in force (kept between jobs; not state a page can read back from another job)
	mobile    bool      // the mobile flag of those metrics (Emulate.Mobile)
	// insecure: Security.setIgnoreCertificateErrors is on (Request.IgnoreHTTPSErrors). Such a
	// tab is never reused (putTab): its context may hold connections to untrusted servers.
	insecure bool
	// scripts are the document scripts the last job added (its storage seed and console
	// counter): reset removes them once about:blank has committed; a failed job's tab is
	// discarded with them (touched only by the job holding the tab).
	scripts []proto.PageScriptIdentifier
	// private: the current job ran logged in (Request.State or SaveState): the clean slate
	// clears the context's HTTP cache, which DevTools' cache switch leaves written and other
	// pages of the context (a popup) read.
	private bool

	// Request blocking in force (see applyBlock); touched only by the job holding the tab.
	blockedURLs []string // nil: unknown, set on the next job
	fetchOn     bool
	fetchTypes  []string
	fetchCats   []string // filter categories the request-stage pattern is on for

	// ctx ends when the renderer crashes, the target goes away or the instance dies.
	ctx    context.Context
	cancel context.CancelCauseFunc

	egress EgressSession // this context's proxy session, nil without Config.Egress
	// dlDir is the directory a launched Chromium downloads this context's files into
	// (nativedl.go); "" with a remote browser, whose Document responses are paused instead.
	dlDir string

	mu      sync.Mutex
	origins map[string]struct{} // origins the current job touched, cleared between jobs
	st      pageState
	// blocking is the current job's request blocking (filter.go).
	blocking blockState
	// dlCtx is set while the job's first navigation runs: a main-frame response that is a
	// PDF or a download is then taken (download.go) under it; nil lets every response through.
	dlCtx context.Context
	// onDocumentCut, while a wait listens (untilDocumentCut), is called once when the main
	// document's body fails.
	onDocumentCut func()
	// native is the download Chromium makes of the job's main-frame response (nativedl.go).
	native *tabDownload
}

// pageState is what the event loop learned about the current job's page.
type pageState struct {
	sawDocument bool   // a main-frame Document response arrived
	status      int    // of the last main-frame Document response
	docURL      string // its URL (after redirects)
	frameURL    string // last committed main-frame URL, for pages without a response (data:)
	inflight    map[proto.NetworkRequestID]struct{}
	lastNet     time.Time   // last request start or end
	blank       bool        // the main frame committed about:blank (clean-slate barrier)
	egress      string      // X-Snapq-Egress of the last main-frame Document response: the guard answered, not the target
	docRequest  string      // URL of the last main-frame Document request (the hop a failed navigation was on)
	contentType string      // MIME type of the last main-frame Document response
	docHeader   http.Header // its headers (a download is described from them: nativedl.go)
	redirects   []string    // URLs that redirected the current main-frame navigation, in order
	download    *download   // the main-frame response taken instead of rendered (download.go)
	// The main-frame document request in progress, whether its response arrived, and, when
	// its body then failed (a reset, a close before Content-Length), Chromium's error text.
	docRequestID proto.NetworkRequestID
	docResponded bool
	docCut       string
}

// newTab creates a browser context and a page in it and enables the domains the event loop
// needs. The HTTP cache is disabled for the tab's life so nothing is reused across jobs.
func newTab(ctx context.Context, inst *instance) (t *tab, err error) {
	rb := inst.rb.Context(ctx)
	create := proto.TargetCreateBrowserContext{DisposeOnDetach: true}
	var sess EgressSession
	if inst.cfg.Egress != nil {
		// One proxy session per context: every request it records belongs to this tab's job.
		if sess, err = inst.cfg.Egress(); err != nil {
			return nil, fmt.Errorf("start egress proxy: %w", err)
		}
		create.ProxyServer, create.ProxyBypassList = sess.URL(), proxyBypassList
	}
	bc, err := create.Call(rb)
	if err != nil {
		if sess != nil {
			_ = sess.Close()
		}
		return nil, fmt.Errorf("create browser context: %w", err)
	}
	t = &tab{inst: inst, contextID: bc.BrowserContextID, origins: map[string]struct{}{}, egress: sess,
		emulated: noEmulation}
	t.ctx, t.cancel = context.WithCancelCause(inst.ctx)
	defer func() {
		if err != nil {
			t.discard()
		}
	}()
	if err := t.setDownloadBehavior(rb); err != nil {
		return t, err
	}
	target, err := proto.TargetCreateTarget{URL: "about:blank", BrowserContextID: bc.BrowserContextID}.Call(rb)
	if err != nil {
		return t, fmt.Errorf("create target: %w", err)
	}
	// The returned page's own context is ctx's; it is never used (every call re-binds it).
	t.page, err = rb.PageFromTarget(target.TargetID)
	if err != nil {
		return t, fmt.Errorf("attach to target: %w", err)
	}
	inst.register(t)
	return t, t.setUp(t.page.Context(ctx))
}

// setUp enables the domains the event loop needs on a new tab, disables its HTTP cache and
// service workers, and installs the console error counter.
func (t *tab) setUp(p *rod.Page) error {
	if err := (proto.NetworkEnable{}).Call(p); err != nil {
		return fmt.Errorf("enable network events: %w", err)
	}
	if err := (proto.InspectorEnable{}).Call(p); err != nil {
		return fmt.Errorf("enable crash events: %w", err)
	}
	if err := (proto.NetworkSetCacheDisabled{CacheDisabled: true}).Call(p); err != nil {
		return fmt.Errorf("disable HTTP cache: %w", err)
	}
	// A service worker from an earlier job must never answer for this one, and a page's
	// own worker must not hide requests from the network events.
	if err := (proto.NetworkSetBypassServiceWorker{Bypass: true}).Call(p); err != nil {
		return fmt.Errorf("bypass service workers: %w", err)
	}
	// The console error counter (quality.go) is the same for every job: installed once for
	// the tab's life, not added at each job's start and removed at its clean slate.
	if _, err := addConsoleCounter(p); err != nil {
		return fmt.Errorf("console counter: %w", err)
	}
	return nil
}

// fail marks the tab unusable; the job running on it stops with cause.
func (t *tab) fail(cause error) { t.cancel(cause) }

// discard throws the tab and its browser context away.
func (t *tab) discard() {
	t.cancel(errors.New("tab discarded"))
	if t.page != nil {
		t.inst.unregister(t)
	}
	if t.inst.alive() {
		ctx, cancel := context.WithTimeout(t.inst.ctx, cleanTimeout)
		// Disposing the context closes its pages.
		if err := (proto.TargetDisposeBrowserContext{BrowserContextID: t.contextID}).Call(t.inst.rb.Context(ctx)); err != nil {
			t.inst.log.Debug("dispose browser context", "err", err)
		}
		cancel()
	}
	if t.egress != nil {
		_ = t.egress.Close()
	}
	if t.dlDir != "" {
		_ = os.RemoveAll(t.dlDir)
	}
}

// beginJob forgets the previous job's page state.
func (t *tab) beginJob() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.st = pageState{inflight: map[proto.NetworkRequestID]struct{}{}, lastNet: time.Now()}
	t.native = nil
}

// state returns a copy of the current page state and the number of requests in flight.
func (t *tab) state() (pageState, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.st
	st.redirects = slices.Clone(st.redirects)
	return st, len(t.st.inflight)
}

// handle updates the page state from one event of this tab's session. It runs on the
// instance's event loop, so it must not block.
func (t *tab) handle(msg *rod.Message) {
	switch msg.Method {
	case "Network.requestWillBeSent":
		var e proto.NetworkRequestWillBeSent
		if msg.Load(&e) {
			t.requestWillBeSent(&e)
		}
	case "Network.loadingFinished":
		var e proto.NetworkLoadingFinished
		if msg.Load(&e) {
			t.requestDone(e.RequestID)
		}
	case "Network.loadingFailed":
		var e proto.NetworkLoadingFailed
		if msg.Load(&e) {
			t.requestDone(e.RequestID)
			t.documentFailed(&e)
		}
	case "Network.responseReceived":
		var e proto.NetworkResponseReceived
		if msg.Load(&e) && e.Response != nil {
			t.responseReceived(&e)
		}
	case "Page.frameNavigated":
		var e proto.PageFrameNavigated
		if msg.Load(&e) && e.Frame != nil {
			t.frameNavigated(&e)
		}
	case "Page.javascriptDialogOpening":
		var e proto.PageJavascriptDialogOpening
		if msg.Load(&e) {
			t.dialogOpening(&e)
		}
	case "Page.downloadWillBegin":
		var e proto.PageDownloadWillBegin
		if msg.Load(&e) {
			t.downloadBegan(&e) // nativedl.go
		}
	case "Page.downloadProgress":
		var e proto.PageDownloadProgress
		if msg.Load(&e) {
			t.downloadProgressed(&e)
		}
	case "Fetch.requestPaused":
		var e proto.FetchRequestPaused
		if msg.Load(&e) {
			go t.paused(e) // download.go
		}
	case "Inspector.targetCrashed":
		t.fail(errTargetCrashed)
	case "Inspector.detached":
		t.fail(errTargetClosed)
	}
}

// requestWillBeSent counts a request in flight (except long-lived ones) and records a
// main-frame document request.
func (t *tab) requestWillBeSent(e *proto.NetworkRequestWillBeSent) {
	if e.Type == proto.NetworkResourceTypeDocument && e.FrameID == t.page.FrameID && e.Request != nil {
		t.documentRequested(e)
	}
	switch e.Type {
	case proto.NetworkResourceTypeEventSource, proto.NetworkResourceTypeWebSocket, proto.NetworkResourceTypeMedia:
		return // long-lived by design; they never "finish"
	}
	t.mu.Lock()
	if t.st.inflight != nil {
		t.st.inflight[e.RequestID] = struct{}{}
		t.st.lastNet = time.Now()
	}
	t.mu.Unlock()
}

// responseReceived records the response's origin and, of the main document, its status,
// URL, content type and egress header.
func (t *tab) responseReceived(e *proto.NetworkResponseReceived) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.addOrigin(e.Response.URL)
	if e.Type != proto.NetworkResourceTypeDocument || e.FrameID != t.page.FrameID {
		return
	}
	hdr := headerOfNetwork(e.Response.Headers)
	if t.st.frameURL != "" && !t.st.blank && takeDownload(e.Response.Status, hdr) != nil {
		return // a download started after the page committed (a click, a script) is not its document
	}
	t.st.sawDocument = true
	t.st.docResponded = t.st.docResponded || e.RequestID == t.st.docRequestID
	t.st.status = e.Response.Status
	t.st.docURL = e.Response.URL
	t.st.contentType = e.Response.MIMEType
	t.st.docHeader = hdr
	t.st.egress = ""
	if t.egress != nil {
		t.st.egress = hdr.Get(egressHeader)
	}
}

// frameNavigated records the frame's origins and, of the main frame, its URL.
func (t *tab) frameNavigated(e *proto.PageFrameNavigated) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.addOrigin(e.Frame.SecurityOrigin)
	t.addOrigin(e.Frame.URL)
	if e.Frame.ParentID == "" {
		t.st.frameURL = e.Frame.URL
		t.st.blank = e.Frame.URL == "about:blank"
	}
}

// dialogOpening answers a dialog, which blocks the renderer's JavaScript (and so every
// wait): it is dismissed, or a beforeunload accepted so navigating away works.
func (t *tab) dialogOpening(e *proto.PageJavascriptDialogOpening) {
	accept := e.Type == proto.PageDialogTypeBeforeunload
	go func() {
		ctx, cancel := context.WithTimeout(t.ctx, cleanTimeout)
		defer cancel()
		_ = proto.PageHandleJavaScriptDialog{Accept: accept}.Call(t.page.Context(ctx))
	}()
}

// documentRequested records a main-frame document request: a new navigation, or the next
// hop of a redirect (same request ID).
func (t *tab) documentRequested(e *proto.NetworkRequestWillBeSent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.st.docRequest = e.Request.URL
	t.st.docRequestID, t.st.docResponded, t.st.docCut = e.RequestID, false, ""
	if e.RedirectResponse != nil {
		t.st.redirects = append(t.st.redirects, e.RedirectResponse.URL)
	} else {
		t.st.redirects = nil // a new navigation starts its own chain
	}
}

// documentFailed records the main document's body failing after its response arrived (the
// connection reset or closed before Content-Length or the last chunk) and tells the wait
// listening for it (untilDocumentCut). A canceled or aborted load (a new navigation, a
// download taken, the tab closing) is not a cut, and neither is any other failure (an error
// status without a page, ERR_HTTP_RESPONSE_CODE_FAILURE, is a result the load reports).
func (t *tab) documentFailed(e *proto.NetworkLoadingFailed) {
	if e.Canceled || !isBodyCut(e.ErrorText) {
		return
	}
	t.mu.Lock()
	if e.RequestID != t.st.docRequestID || !t.st.docResponded || t.st.docCut != "" {
		t.mu.Unlock()
		return
	}
	t.st.docCut = e.ErrorText
	onCut := t.onDocumentCut
	t.mu.Unlock()
	if onCut != nil {
		onCut()
	}
}

// untilDocumentCut returns parent, also canceled (cause errDocumentCut) as soon as the main
// document's body fails, and a func to stop listening.
func (t *tab) untilDocumentCut(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	t.mu.Lock()
	cut := t.st.docCut != ""
	t.onDocumentCut = func() { cancel(errDocumentCut) }
	t.mu.Unlock()
	if cut {
		cancel(errDocumentCut)
	}
	return ctx, func() {
		t.mu.Lock()
		t.onDocumentCut = nil
		t.mu.Unlock()
		cancel(nil)
	}
}

func (t *tab) requestDone(id proto.NetworkRequestID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.st.inflight[id]; ok {
		delete(t.st.inflight, id)
		t.st.lastNet = time.Now()
	}
}

// addOrigin records the origin of raw (a URL or an origin) for the clean slate. Callers hold mu.
func (t *tab) addOrigin(raw string) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return
	}
	t.origins[u.Scheme+"://"+u.Host] = struct{}{}
}

// reset restores the clean slate after a successful job: leave the page and close stray
// pages, then remove the job's document scripts and clear the context's cookies and every
// touched origin's storage (nothing of the job runs any more to write them again). An error
// means the tab must be thrown away. (Sending the clearing calls at once was measured: no
// faster, 85 ms a clean slate either way on one tab.)
func (t *tab) reset() error {
	ctx, cancel := context.WithTimeout(t.ctx, cleanTimeout)
	defer cancel()
	p := t.page.Context(ctx)

	// Blocking belongs to the job that asked for it.
	if err := t.clearBlock(p); err != nil {
		return err
	}
	if err := t.leavePage(ctx, p); err != nil {
		return err
	}
	if err := t.closeStrayTargets(ctx); err != nil {
		return err
	}
	// Removed here, not when the job ends: a renderer still busy with a hostile page (an
	// endless document) would hold the job for cleanTimeout, and a script left behind would
	// seed the next job.
	for _, id := range t.scripts {
		if err := (proto.PageRemoveScriptToEvaluateOnNewDocument{Identifier: id}).Call(p); err != nil {
			return fmt.Errorf("remove the last job's document script: %w", err)
		}
	}
	t.scripts = nil
	if t.egress != nil {
		t.egress.Reset()
	}
	if err := t.clearDownloads(); err != nil { // nativedl.go
		return err
	}
	return t.clearStorage(ctx, p)
}

// leavePage navigates to about:blank and waits until the event loop has seen it commit.
func (t *tab) leavePage(ctx context.Context, p *rod.Page) error {
	t.mu.Lock()
	t.st.blank = false
	t.mu.Unlock()
	nav, err := proto.PageNavigate{URL: "about:blank"}.Call(p)
	if err != nil {
		return fmt.Errorf("navigate to about:blank: %w", err)
	}
	if nav.ErrorText != "" {
		return fmt.Errorf("navigate to about:blank: %s", nav.ErrorText)
	}
	// Barrier: once the event loop has seen about:blank commit, no event of the old page is
	// still queued to leak into the next job's state (a stale request would block network idle).
	err = poll(ctx, 5*time.Millisecond, func() (bool, error) {
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.st.blank, nil
	})
	if err != nil {
		return fmt.Errorf("wait for about:blank to commit: %w", err)
	}
	return nil
}

// clearStorage clears the context's cookies, its private cache and the storage of every
// origin the job touched.
func (t *tab) clearStorage(ctx context.Context, p *rod.Page) error {
	t.mu.Lock()
	origins := make([]string, 0, len(t.origins))
	for o := range t.origins {
		origins = append(origins, o)
	}
	t.origins = map[string]struct{}{}
	t.mu.Unlock()

	// browserContextId is only accepted on the browser target.
	if err := (proto.StorageClearCookies{BrowserContextID: t.contextID}).Call(t.inst.rb.Context(ctx)); err != nil {
		return fmt.Errorf("clear cookies: %w", err)
	}
	if err := t.clearPrivateCache(p); err != nil {
		return err
	}
	for _, o := range origins {
		// "all" covers local storage, IndexedDB, cache storage, service workers, …
		if err := (proto.StorageClearDataForOrigin{Origin: o, StorageTypes: "all"}).Call(p); err != nil {
			return fmt.Errorf("clear storage of %s: %w", o, err)
		}
	}
	return nil
}

// closeStrayTargets closes the pages the job opened (popups are blocked, but window.open from
// a gesture is not).
func (t *tab) closeStrayTargets(ctx context.Context) error {
	targets, err := proto.TargetGetTargets{}.Call(t.inst.rb.Context(ctx))
	if err != nil {
		return fmt.Errorf("list targets: %w", err)
	}
	for _, ti := range targets.TargetInfos {
		// Chromium's own UI (its omnibox popup's pages, listed in every context) is no page's:
		// closing it was two round trips a job that closed nothing.
		if ti.Type == "browser_ui" {
			continue
		}
		if ti.BrowserContextID == t.contextID && ti.TargetID != t.page.TargetID {
			if _, err := (proto.TargetCloseTarget{TargetID: ti.TargetID}).Call(t.inst.rb.Context(ctx)); err != nil {
				return fmt.Errorf("close stray target: %w", err)
			}
		}
	}
	return nil
}

// clearPrivateCache clears the HTTP cache of the tab's context after a logged-in job, so a
// logged-in response never serves another job (DevTools' cache switch stops the page from
// reading it, not from writing it, and does not cover other pages of the context).
func (t *tab) clearPrivateCache(p *rod.Page) error {
	if !t.private {
		return nil
	}
	if err := (proto.NetworkClearBrowserCache{}).Call(p); err != nil {
		return fmt.Errorf("clear the HTTP cache: %w", err)
	}
	t.private = false
	return nil
}
