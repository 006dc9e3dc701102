package capture

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/cdp"
	"github.com/go-rod/rod/lib/proto"
)

// Bounds for housekeeping calls that run outside a job's context.
const (
	cleanTimeout    = 5 * time.Second // clean slate between jobs, disposing a tab
	shutdownTimeout = 5 * time.Second // Browser.close before the process is killed
)

// instance is one browser connection: a launched Chromium process or a remote endpoint.
// Its context is canceled when the connection drops or the instance is closed; every tab's
// and job's context hangs off it, so nothing waits on a dead browser.
type instance struct {
	cfg Config
	log *slog.Logger

	rb     *rod.Browser   // bound to ctx
	ws     transport      // the CDP connection: Chromium's DevTools pipe, or a WebSocket to RemoteURL
	proc   *chromeProcess // nil when connected to RemoteURL
	dir    string         // temporary user-data-dir, "" when remote
	ctx    context.Context
	cancel context.CancelCauseFunc

	idle chan *tab // clean tabs ready for a job

	egress EgressSession // the browser-wide proxy session, nil without Config.Egress

	mu        sync.Mutex
	bySession map[proto.TargetSessionID]*tab
	byTarget  map[proto.TargetTargetID]*tab

	// Guarded by Browser.mu.
	jobs     int           // jobs started on this instance
	inflight int           // jobs running now
	drained  chan struct{} // closed once a retiring instance is drained and closed

	closeOnce  sync.Once
	dispatched chan struct{} // closed when the event loop ends
}

// startInstance launches Chromium (or connects to cfg.RemoteURL) and starts its event loop.
// ctx bounds the start only.
func startInstance(ctx context.Context, cfg Config, devtoolsPort bool) (inst *instance, err error) {
	inst = &instance{
		cfg:        cfg,
		log:        cfg.Logger,
		idle:       make(chan *tab, cfg.Tabs),
		bySession:  map[proto.TargetSessionID]*tab{},
		byTarget:   map[proto.TargetTargetID]*tab{},
		drained:    make(chan struct{}),
		dispatched: make(chan struct{}),
	}
	inst.ctx, inst.cancel = context.WithCancelCause(context.Background())
	defer func() {
		if err != nil {
			inst.close(err)
		}
	}()

	if cfg.RemoteURL == "" {
		err = inst.launch(ctx, devtoolsPort)
	} else {
		err = inst.dial(ctx)
	}
	if err != nil {
		return inst, err
	}
	inst.rb = rod.New().Client(cdp.New().Start(inst.ws)).Context(inst.ctx).NoDefaultDevice()
	// Connect's one call is not bound by ctx (it would end rod's event loop too); closing
	// the connection when ctx ends unblocks it.
	stop := context.AfterFunc(ctx, func() { _ = inst.ws.Close() })
	err = inst.rb.Connect()
	stop()
	if err != nil {
		if inst.proc == nil {
			err = fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		where := "chromium"
		if inst.proc == nil {
			where = cfg.RemoteURL
		}
		return inst, fmt.Errorf("connect to %s: %w", where, err)
	}
	go inst.dispatch(inst.rb.Event())
	if inst.proc == nil && cfg.Egress != nil {
		if err = checkRemoteEgress(ctx, inst.rb, cfg); err != nil {
			return inst, fmt.Errorf("%s: %w", cfg.RemoteURL, err)
		}
	}

	if inst.proc != nil {
		inst.logStarted()
	} else {
		inst.log.Info("connected to remote browser", "url", cfg.RemoteURL)
	}
	return inst, nil
}

// launch starts a Chromium of inst's own, with a fresh profile and (with Config.Egress) the
// browser-wide proxy, connected over its DevTools pipe (a port with devtoolsPort, only in
// tests and measurements).
func (inst *instance) launch(ctx context.Context, devtoolsPort bool) (err error) {
	cfg := inst.cfg
	sweepStaleProfiles(inst.log)
	inst.dir, err = os.MkdirTemp("", profilePrefix)
	if err != nil {
		return fmt.Errorf("create user-data-dir: %w", err)
	}
	if cfg.Egress != nil {
		// The browser-wide proxy covers anything outside the job contexts (which get
		// their own guarded proxy): Chromium's own traffic, refused (egress.go).
		inst.egress, err = newRefuseProxy()
		if err != nil {
			return fmt.Errorf("start egress proxy: %w", err)
		}
		cfg.ExtraFlags = map[string]string{"proxy-server": inst.egress.URL()}
		for k, v := range egressFlags() {
			cfg.ExtraFlags[k] = v
		}
		for k, v := range inst.cfg.ExtraFlags {
			cfg.ExtraFlags[k] = v
		}
	}
	inst.proc, inst.ws, err = launchChromium(ctx, cfg, inst.dir, devtoolsPort)
	if err != nil {
		return fmt.Errorf("launch %s: %w", cfg.ChromeBin, err)
	}
	return nil
}

// dial connects to Config.RemoteURL over a WebSocket. A remote endpoint that refuses, times
// out or is overloaded is "unavailable" (remote.go): the job is handed back to the queue
// without counting a failure.
func (inst *instance) dial(ctx context.Context) error {
	wsURL, err := resolveWebSocketURL(ctx, inst.cfg.RemoteURL)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", inst.cfg.RemoteURL, markUnavailable(err))
	}
	ws := &cdp.WebSocket{}
	if err := ws.Connect(ctx, wsURL, nil); err != nil {
		return fmt.Errorf("connect to %s: %w: %w", wsURL, ErrUnavailable, err)
	}
	inst.ws = ws
	return nil
}

// resolveWebSocketURL turns http://host:port into the browser's ws:// debugger URL.
func resolveWebSocketURL(ctx context.Context, raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	switch u.Scheme {
	case "ws", "wss":
		return raw, nil
	case "http", "https":
	default:
		return "", fmt.Errorf("scheme %q: want ws, wss, http or https", u.Scheme)
	}
	u.Path = "/json/version"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	res, err := remoteHTTP.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = res.Body.Close() }()
	if res.StatusCode != http.StatusOK {
		return "", &statusError{url: u.String(), status: res.Status, code: res.StatusCode}
	}
	var v struct {
		WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&v); err != nil {
		return "", fmt.Errorf("GET %s: %w", u, err)
	}
	if v.WebSocketDebuggerURL == "" {
		return "", fmt.Errorf("GET %s: no webSocketDebuggerUrl", u)
	}
	return v.WebSocketDebuggerURL, nil
}

// alive reports whether the connection is usable.
func (inst *instance) alive() bool { return inst.ctx.Err() == nil }

// dispatch routes CDP events to the tab they belong to. It is the only subscriber this
// package keeps on the connection; when the stream ends, the browser is gone.
func (inst *instance) dispatch(events <-chan *rod.Message) {
	defer close(inst.dispatched)
	for msg := range events {
		inst.route(msg)
	}
	if inst.ctx.Err() == nil {
		inst.log.Warn("browser connection lost; it will be restarted for the next job")
		inst.cancel(errBrowserGone)
	}
}

// route handles one event. rod panics on an event it cannot decode; that must not take the
// worker down, so it is logged and the event dropped.
func (inst *instance) route(msg *rod.Message) {
	defer func() {
		if r := recover(); r != nil {
			inst.log.Error("undecodable CDP event dropped", "method", msg.Method, "panic", r)
		}
	}()
	switch msg.Method {
	case "Target.targetCrashed":
		var e proto.TargetTargetCrashed
		if msg.Load(&e) {
			if t := inst.tabByTarget(e.TargetID); t != nil {
				t.fail(errTargetCrashed)
			}
		}
		return
	case "Target.detachedFromTarget":
		var e proto.TargetDetachedFromTarget
		if msg.Load(&e) {
			if t := inst.tabBySession(e.SessionID); t != nil {
				t.fail(errTargetClosed)
			}
		}
		return
	}
	if msg.SessionID == "" {
		return
	}
	if t := inst.tabBySession(msg.SessionID); t != nil {
		t.handle(msg)
	}
}

func (inst *instance) register(t *tab) {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	inst.bySession[t.page.SessionID] = t
	inst.byTarget[t.page.TargetID] = t
}

func (inst *instance) unregister(t *tab) {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	delete(inst.bySession, t.page.SessionID)
	delete(inst.byTarget, t.page.TargetID)
}

func (inst *instance) tabBySession(id proto.TargetSessionID) *tab {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	return inst.bySession[id]
}

func (inst *instance) tabByTarget(id proto.TargetTargetID) *tab {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	return inst.byTarget[id]
}

// takeTab returns a clean idle tab or opens a new one.
func (inst *instance) takeTab(ctx context.Context) (*tab, error) {
	select {
	case t := <-inst.idle:
		return t, nil
	default:
	}
	return newTab(ctx, inst)
}

// putTab makes a tab available again after a job. A tab that failed, is worn out, or whose
// clean slate could not be restored is thrown away with its browser context.
func (inst *instance) putTab(t *tab, jobOK bool) {
	t.jobs++
	reason := ""
	switch {
	case !inst.alive():
		reason = "browser gone"
	case t.ctx.Err() != nil:
		reason = context.Cause(t.ctx).Error()
	case !jobOK:
		reason = "job failed"
	case t.insecure:
		reason = "certificate errors were ignored"
	case t.jobs >= inst.cfg.TabRecycleAfter:
		reason = "recycle"
	}
	if reason == "" {
		if err := t.reset(); err != nil {
			reason = "clean slate failed: " + err.Error()
		}
	}
	if reason == "" {
		select {
		case inst.idle <- t:
			return
		default:
			reason = "too many idle tabs"
		}
	}
	inst.log.Debug("tab discarded", "reason", reason, "jobs", t.jobs)
	t.discard()
}

// close ends the instance: in-flight jobs see cause, the browser is closed (a remote one only
// loses the contexts this package created) and the temporary profile is removed.
func (inst *instance) close(cause error) {
	inst.closeOnce.Do(func() {
		inst.mu.Lock()
		tabs := make([]*tab, 0, len(inst.byTarget))
		for _, t := range inst.byTarget {
			tabs = append(tabs, t)
		}
		inst.mu.Unlock()

		alive := inst.alive()
		inst.cancel(cause)
		if inst.rb != nil && alive {
			inst.closeBrowser(tabs)
		}
		if inst.ws != nil {
			_ = inst.ws.Close()
		}
		sock := ""
		if inst.dir != "" {
			sock = socketDir(inst.dir) // before the launcher's Cleanup removes the profile
		}
		if inst.proc != nil && inst.proc.PID() != 0 {
			inst.waitExit()
			// A browser killed from outside leaves its children running a moment longer:
			// its process group goes with it before its profile is removed.
			killProcess(inst.proc.PID())
		}
		if sock != "" {
			_ = os.RemoveAll(sock)
		}
		// The proxies go with the browser: the browser-wide one and every context's,
		// idle tabs' included (a tab still running a job closes its own again, harmlessly,
		// when it is discarded).
		for _, t := range tabs {
			if t.egress != nil {
				_ = t.egress.Close()
			}
		}
		if inst.egress != nil {
			_ = inst.egress.Close()
		}
		if inst.dir != "" {
			if err := removeProfileSettled(inst.dir); err != nil {
				inst.log.Warn("remove chromium profile", "dir", inst.dir, "err", err)
			}
		}
		inst.log.Info("browser closed", "reason", strings.TrimSpace(cause.Error()))
	})
}

// closeBrowser closes a launched browser, or the contexts of tabs in a remote one.
func (inst *instance) closeBrowser(tabs []*tab) {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	rb := inst.rb.Context(ctx)
	if inst.proc != nil {
		_ = proto.BrowserClose{}.Call(rb)
		return
	}
	for _, t := range tabs {
		_ = proto.TargetDisposeBrowserContext{BrowserContextID: t.contextID}.Call(rb)
	}
}

// waitExit waits for the launched browser's process to exit, killing it after
// shutdownTimeout.
func (inst *instance) waitExit() {
	exited := make(chan struct{})
	go func() {
		inst.proc.Cleanup() // waits for the process to exit
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(shutdownTimeout):
		killProcess(inst.proc.PID())
		<-exited
	}
}
