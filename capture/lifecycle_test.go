package capture

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rod/rod/lib/proto"
)

// idleTab returns the single idle tab of a Tabs=1 browser without taking it away.
func idleTab(t *testing.T, b *Browser) *tab {
	t.Helper()
	b.mu.Lock()
	inst := b.inst
	b.mu.Unlock()
	if inst == nil {
		t.Fatal("no running browser")
	}
	select {
	case tb := <-inst.idle:
		inst.idle <- tb
		return tb
	default:
		t.Fatal("no idle tab: the last job's tab was discarded")
		return nil
	}
}

func TestCleanSlateBetweenJobs(t *testing.T) {
	b := newBrowser(t, Config{Tabs: 1})
	req := Request{URL: fixtures.URL + "/state", Name: "state", Screenshot: Screenshot{Mode: ModeViewport}}

	first := mustCapture(t, b, req)
	found, after, _ := strings.Cut(first.Title, "|")
	// The response's own Set-Cookie (srv=1) is visible to its script; nothing else may be.
	const clean = "header=;cookie=srv=1;local=;session="
	if found != clean {
		t.Fatalf("job 1 found state on a fresh tab: %q", found)
	}
	if after != "cookie=srv=1; js=1;local=1;session=1" {
		t.Fatalf("job 1 could not set its state: %q", after)
	}
	tab1 := idleTab(t, b)

	second := mustCapture(t, b, req)
	if tab2 := idleTab(t, b); tab2 != tab1 {
		t.Fatal("job 2 ran on a different tab; the test proves nothing")
	}
	found, _, _ = strings.Cut(second.Title, "|")
	if found != clean {
		t.Errorf("job 2 on the same tab saw job 1's state: %q", found)
	}
}

// An interactive capture returns before its tab's clean slate (giveBack runs
// it after): the next capture on the one tab must still find the tab clean,
// because the slot is held until the clean slate is done.
func TestCleanSlateBetweenInteractiveJobs(t *testing.T) {
	b := newBrowser(t, Config{Tabs: 1})
	req := Request{URL: fixtures.URL + "/state", Name: "state", Screenshot: Screenshot{Mode: ModeViewport}}
	ctx, cancel := context.WithTimeout(WithInteractive(context.Background()), time.Minute)
	defer cancel()
	const clean = "header=;cookie=srv=1;local=;session="
	for i := range 3 {
		res, err := b.Capture(ctx, req)
		if err != nil {
			t.Fatalf("interactive job %d: %v", i+1, err)
		}
		found, after, _ := strings.Cut(res.Title, "|")
		if found != clean {
			t.Fatalf("interactive job %d found another job's state: %q", i+1, found)
		}
		if after != "cookie=srv=1; js=1;local=1;session=1" {
			t.Fatalf("interactive job %d could not set its state: %q", i+1, after)
		}
	}
	// The clean slate of the last one finishes after Capture returned: its
	// tab comes back idle (not discarded).
	for {
		b.mu.Lock()
		inst := b.inst
		b.mu.Unlock()
		if len(inst.idle) == 1 && len(b.slots) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the last interactive job's tab never came back clean: %d idle, %d slots held", len(inst.idle), len(b.slots))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestRendererCrashFailsFast(t *testing.T) {
	b := newBrowser(t, Config{Tabs: 1})
	done := make(chan error, 1)
	go func() {
		// Waits up to 20 s for a selector that never shows.
		_, err := capture(t, b, Request{URL: fixtures.URL + "/hidden", Name: "crash",
			Wait: Wait{Selector: "#x", SelectorTimeout: 20 * time.Second}})
		done <- err
	}()
	// Wait until the job is past navigation and in its selector wait; a fixed sleep
	// was too short on a loaded machine.
	var running *tab
	for deadline := time.Now().Add(10 * time.Second); running == nil; {
		if time.Now().After(deadline) {
			t.Fatal("the job never loaded its page")
		}
		time.Sleep(50 * time.Millisecond)
		b.mu.Lock()
		inst := b.inst
		b.mu.Unlock()
		if inst == nil {
			continue
		}
		inst.mu.Lock()
		for _, tb := range inst.byTarget {
			if st, _ := tb.state(); st.sawDocument && st.status == 200 {
				running = tb
			}
		}
		inst.mu.Unlock()
	}
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	go func() {
		// Page.crash never answers: the renderer is gone.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = proto.PageCrash{}.Call(running.page.Context(ctx))
	}()
	select {
	case err := <-done:
		wantCode(t, err, CodeBrowserCrashed, true)
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("crash took %s to report", d)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("a crashed renderer hung the capture")
	}
	// The slot recovers with a new tab.
	res := mustCapture(t, b, Request{URL: fixtures.URL + "/page?h=100", Name: "after"})
	diff(t, "status", 200, res.HTTPStatus)
}

func TestBrowserRestartsAfterDeath(t *testing.T) {
	b := newBrowser(t, Config{Tabs: 1})
	mustCapture(t, b, Request{URL: fixtures.URL + "/page?h=100", Name: "before"})
	b.mu.Lock()
	old := b.inst
	b.mu.Unlock()
	killProcess(old.proc.PID())
	select {
	case <-old.ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the browser's death went unnoticed")
	}
	res := mustCapture(t, b, Request{URL: fixtures.URL + "/page?h=100", Name: "after"})
	diff(t, "status", 200, res.HTTPStatus)
	b.mu.Lock()
	if b.inst == old || b.inst == nil {
		t.Error("no new browser instance")
	}
	b.mu.Unlock()
	if err := b.Ping(context.Background()); err != nil {
		t.Errorf("Ping after restart: %v", err)
	}
}

func TestBrowserRecycle(t *testing.T) {
	b := newBrowser(t, Config{Tabs: 2, BrowserRecycleAfter: 3})
	var pids []int
	for i := range 4 {
		mustCapture(t, b, Request{URL: fixtures.URL + "/page?h=100", Name: fmt.Sprint(i)})
		b.mu.Lock()
		if b.inst != nil {
			pids = append(pids, b.inst.proc.PID())
		} else {
			pids = append(pids, 0) // retired, next job starts a new one
		}
		b.mu.Unlock()
	}
	// Jobs 1-2 on the first browser, job 3 retires it, job 4 runs on a new one.
	if pids[0] == 0 || pids[0] != pids[1] || pids[2] != 0 || pids[3] == 0 || pids[3] == pids[0] {
		t.Errorf("browser pids after each job = %v, want [a a 0 b]", pids)
	}
}

func TestCloseCancelsAndRefuses(t *testing.T) {
	b := newBrowser(t, Config{Tabs: 1})
	done := make(chan error, 1)
	go func() {
		_, err := capture(t, b, Request{URL: fixtures.URL + "/hidden", Name: "s", Wait: Wait{Selector: "#x"}})
		done <- err
	}()
	time.Sleep(500 * time.Millisecond)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		wantCode(t, err, CodeCanceled, true)
	case <-time.After(10 * time.Second):
		t.Fatal("in-flight capture did not end on Close")
	}
	_, err := capture(t, b, Request{URL: fixtures.URL + "/page", Name: "late"})
	ce := wantCode(t, err, CodeCanceled, true)
	if !errors.Is(ce, ErrClosed) {
		t.Errorf("error %v does not wrap ErrClosed", ce)
	}
	if b.inst != nil || b.draining != nil {
		t.Error("instances left after Close")
	}
}

func TestSlotsBoundConcurrency(t *testing.T) {
	b := sharedBrowser(t)
	// Fill both slots with slow jobs; a third caller with a short deadline must give up
	// waiting for a slot.
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = capture(t, b, Request{URL: fixtures.URL + "/hidden", Name: "s",
				Wait: Wait{Selector: "#x", SelectorTimeout: 1500 * time.Millisecond, BestAttempt: true}})
		}()
	}
	time.Sleep(500 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := b.Capture(ctx, Request{URL: fixtures.URL + "/page", Name: "third"})
	wantCode(t, err, CodeNavigationTimeout, true)
	wg.Wait()
}

// TestRemoteBrowser connects to a Chromium started outside the package (with ExtraFlags that
// make a made-up host fail DNS locally, so no lookup leaves the machine).
func TestRemoteBrowser(t *testing.T) {
	needChromium(t)
	cfg := DefaultConfig()
	cfg.ExtraFlags = map[string]string{"host-resolver-rules": "MAP nothing.test ~NOTFOUND"}
	cfg.NoSandbox = os.Geteuid() == 0 // rod's launcher cannot start it as another user
	dir := t.TempDir()
	l := cfg.newLauncher(dir)
	useDevtoolsPort(l) // a remote browser is reached on its DevTools port
	wsURL, err := l.Launch()
	if err != nil {
		t.Fatalf("launch remote chromium: %v", err)
	}
	t.Cleanup(func() { killProcess(l.PID()); _ = removeProfile(dir); l.Cleanup() })
	u, err := url.Parse(wsURL)
	if err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, Config{RemoteURL: "http://" + u.Host, ChromeBin: "/nonexistent"})
	res := mustCapture(t, b, Request{URL: fixtures.URL + "/page?h=100", Name: "remote"})
	diff(t, "status", 200, res.HTTPStatus)
	_, err = capture(t, b, Request{URL: "http://nothing.test/", Name: "dns"})
	wantCode(t, err, CodeDNSFailure, false)

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// Closing our side must leave the remote browser running.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := resolveWebSocketURL(ctx, "http://"+u.Host); err != nil {
		t.Errorf("remote browser gone after Close: %v", err)
	}
}

// allTargets lists every target of b's running browser.
func allTargets(t *testing.T, b *Browser) (*instance, []*proto.TargetTargetInfo) {
	t.Helper()
	b.mu.Lock()
	inst := b.inst
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	targets, err := proto.TargetGetTargets{}.Call(inst.rb.Context(ctx))
	if err != nil {
		t.Fatal(err)
	}
	return inst, targets.TargetInfos
}

// pageTargets lists the page targets of b's tab contexts (Chromium's own browser_ui pages
// aside).
func pageTargets(t *testing.T, b *Browser) []string {
	t.Helper()
	inst, targets := allTargets(t, b)
	contexts := map[proto.BrowserBrowserContextID]bool{}
	inst.mu.Lock()
	for _, tb := range inst.byTarget {
		contexts[tb.contextID] = true
	}
	inst.mu.Unlock()
	var pages []string
	for _, ti := range targets {
		if contexts[ti.BrowserContextID] && ti.Type == "page" {
			pages = append(pages, ti.URL)
		}
	}
	return pages
}

// The clean slate closes a popup a job's click opened, and only that: the tab's own page
// stays, and so does Chromium's UI in the context, which it skips.
func TestCleanSlateClosesPopups(t *testing.T) {
	b := newBrowser(t, Config{Tabs: 1})
	mux := http.NewServeMux()
	mux.HandleFunc("/opener", func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprint(w, `<!doctype html><title>Opener</title><button id="b" onclick="window.open('/child')">open</button>`)
	})
	mux.HandleFunc("/child", func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprint(w, `<!doctype html><title>Child</title>child`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	mustCapture(t, b, Request{URL: srv.URL + "/opener", Name: "o", Actions: []Action{
		{Type: ActionClick, Selector: "#b"}, {Type: ActionWait, Duration: 300 * time.Millisecond}}})
	pages := pageTargets(t, b)
	if len(pages) != 1 || pages[0] != "about:blank" {
		t.Errorf("pages after the clean slate: %q, want the tab's own about:blank alone", pages)
	}
	// The next job runs on the same clean tab.
	res := mustCapture(t, b, Request{URL: srv.URL + "/child", Name: "c", Outputs: []string{OutputText}})
	diff(t, "title", "Child", res.Title)
}

// Chromium's omnibox WebUI popups, which headless Chromium prewarms in every browser context
// (a renderer of ~160 MB RSS each), are never started: no browser_ui target exists.
func TestNoOmniboxWebUI(t *testing.T) {
	b := newBrowser(t, Config{Tabs: 2})
	srv := siteServer(t)
	mustCapture(t, b, Request{URL: srv.URL + "/short", Name: "s"})
	_, targets := allTargets(t, b)
	for _, ti := range targets {
		if ti.Type == "browser_ui" {
			t.Errorf("a browser_ui target runs: %s", ti.URL)
		}
	}
}
