package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/input"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"
	"github.com/ysmood/gson"

	"github.com/snapq/snapq/internal/testenv"
)

// browserUI drives the dashboard in a real headless Chromium. Every helper
// fails the test (after saving a screenshot of the page as it was) instead of
// panicking, so the stack's processes are always cleaned up.
type browserUI struct {
	t    *testing.T
	page *rod.Page
	dir  string // where screenshots go
}

// openDashboard launches Debian's Chromium (never a downloaded one) and opens url.
func openDashboard(t *testing.T, url string) *browserUI {
	t.Helper()
	chrome := testenv.Getenv("SNAPQ_CHROME_BIN", "/usr/bin/chromium")
	l := launcher.New().Bin(chrome).Headless(true).UserDataDir(t.TempDir()).
		Set("disable-background-networking").Set("disable-component-update").Set("disable-sync").Set("no-first-run").
		Set("disable-gpu").Set("disable-dev-shm-usage").
		// asynqmon's page links Google Fonts: no name resolves, so the test browser
		// reaches nothing but the loopback addresses it is given.
		Set("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1").
		NoSandbox(os.Geteuid() == 0)
	u, err := l.Launch()
	if err != nil {
		t.Fatalf("launch %s: %v", chrome, err)
	}
	t.Cleanup(l.Cleanup)
	b := rod.New().ControlURL(u)
	if err := b.Connect(); err != nil {
		t.Fatalf("connect to chromium: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	page, err := b.Page(proto.TargetCreateTarget{})
	if err != nil {
		t.Fatal(err)
	}
	dir := testenv.Getenv("SNAPQ_TEST_ARTIFACTS", "artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ui := &browserUI{t: t, page: page, dir: dir}
	ui.viewport(1280, 900)
	if err := page.Navigate(url); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	if err := page.Timeout(30 * time.Second).WaitLoad(); err != nil {
		t.Fatalf("load %s: %v", url, err)
	}
	return ui
}

func (u *browserUI) viewport(w, h int) {
	u.t.Helper()
	if err := u.page.SetViewport(&proto.EmulationSetDeviceMetricsOverride{Width: w, Height: h, DeviceScaleFactor: 1}); err != nil {
		u.t.Fatal(err)
	}
}

// fatalf saves the page as <test>-failure.png, then fails the test.
func (u *browserUI) fatalf(format string, args ...any) {
	u.t.Helper()
	u.shot(strings.ReplaceAll(u.t.Name(), "/", "_") + "-failure")
	u.t.Fatalf(format, args...)
}

// shot saves a full-page PNG under the artifacts directory.
func (u *browserUI) shot(name string) string {
	u.t.Helper()
	png, err := u.page.Screenshot(true, &proto.PageCaptureScreenshot{Format: proto.PageCaptureScreenshotFormatPng})
	if err != nil {
		u.t.Errorf("screenshot %s: %v", name, err)
		return ""
	}
	p := filepath.Join(u.dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		u.t.Errorf("save screenshot: %v", err)
	}
	u.t.Logf("screenshot: %s", p)
	return p
}

// eval runs a JavaScript function in the page and returns its value.
func (u *browserUI) eval(js string, args ...any) gson.JSON {
	u.t.Helper()
	res, err := u.page.Eval(js, args...)
	if err != nil {
		u.fatalf("eval %s: %v", js, err)
	}
	return res.Value
}

// wait polls the JavaScript predicate until it returns true.
func (u *browserUI) wait(what string, timeout time.Duration, js string, args ...any) {
	u.t.Helper()
	if err := u.page.Timeout(timeout).Wait(rod.Eval(js, args...)); err != nil {
		u.fatalf("waiting %s for %s: %v", timeout, what, err)
	}
}

func (u *browserUI) element(sel string) *rod.Element {
	u.t.Helper()
	el, err := u.page.Timeout(20 * time.Second).Element(sel)
	if err != nil {
		u.fatalf("element %s: %v", sel, err)
	}
	return el.CancelTimeout()
}

func (u *browserUI) click(sel string) {
	u.t.Helper()
	if err := u.element(sel).Click(proto.InputMouseButtonLeft, 1); err != nil {
		u.fatalf("click %s: %v", sel, err)
	}
}

// setValue replaces a form field's value the way typing would (input event included).
func (u *browserUI) setValue(sel, v string) {
	u.t.Helper()
	el := u.element(sel)
	if _, err := el.Eval(`function (v) { this.value = v; this.dispatchEvent(new Event('input', {bubbles: true})); }`, v); err != nil {
		u.fatalf("set %s: %v", sel, err)
	}
}

func (u *browserUI) text(sel string) string {
	u.t.Helper()
	s, err := u.element(sel).Text()
	if err != nil {
		u.fatalf("text of %s: %v", sel, err)
	}
	return s
}

// The main flow in a browser: empty state, a rejected submission with its errors next to
// the fields, a batch submitted through the form whose progress bar reaches 100 % without a
// reload, its thumbnails, and a job page where every segment image loaded at its size.
func TestDashboardBatchFlow(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	site := fixtureSite(t)
	ui := openDashboard(t, s.api+"/")

	ui.wait("the empty state", 20*time.Second, `() => !!document.querySelector('#empty-state')`)
	if txt := ui.text("#empty-state"); !strings.Contains(txt, "curl -s -X POST "+s.api+"/v1/batches") {
		ui.fatalf("empty state lacks the curl example: %q", txt)
	}
	ui.shot("dashboard-empty")
	ui.eval(`() => { window.__sameDocument = true; }`) // gone if the page reloads

	ui.click(`main a[href="#/submit"]`)
	ui.element("#f-urls")
	// Two problems at once: a scheme the API refuses on line 2, a viewport too narrow.
	ui.setValue("#f-urls", site+"/short\n\nftp://127.0.0.1/file\n")
	ui.setValue("#f-width", "50")
	ui.click("#submit-batch")
	ui.wait("field errors", 20*time.Second, `() => document.querySelector('#err-urls').textContent !== ''`)
	urlErr, widthErr := ui.text("#err-urls"), ui.text("#err-width")
	if !strings.HasPrefix(urlErr, "Line 3: ") || !strings.Contains(urlErr, "ftp") {
		ui.fatalf("URL error next to the URL field = %q, want it to name line 3 and the ftp scheme", urlErr)
	}
	if widthErr == "" {
		ui.fatalf("no error next to the viewport width field")
	}
	invalid := ui.eval(`() => [...document.querySelectorAll('[aria-invalid=true]')].map(e => e.id).sort().join(',')`).Str()
	if invalid != "f-urls,f-width" {
		ui.fatalf("fields marked invalid: %q, want f-urls,f-width", invalid)
	}
	// The error sits in the same field group as its input.
	if !ui.eval(`() => document.querySelector('#err-urls').parentElement.contains(document.querySelector('#f-urls'))`).Bool() {
		ui.fatalf("the URL error is not next to the URL field")
	}
	ui.shot("dashboard-validation")
	var none struct {
		Batches []batchResp `json:"batches"`
	}
	if s.do("GET", "/v1/batches", nil, &none); len(none.Batches) != 0 {
		t.Fatalf("a rejected form created %d batches", len(none.Batches))
	}

	// A tall page (3000 px: five 720 px segments), a short one, an article, and a slow page
	// that keeps the batch running long enough to watch it move.
	tall := site + "/tall?h=3000"
	ui.setValue("#f-urls", strings.Join([]string{tall, site + "/short", site + "/article?n=12", site + "/slow?ms=4000"}, "\n"))
	ui.setValue("#f-width", "1280")
	ui.setValue("#f-labels", "suite=dashboard-e2e")
	ui.click("#f-out-markdown")
	// Submit from the keyboard: focus the button, press Enter.
	if err := ui.element("#submit-batch").Focus(); err != nil {
		ui.fatalf("focus submit: %v", err)
	}
	if err := ui.page.Keyboard.Press(input.Enter); err != nil {
		ui.fatalf("press Enter: %v", err)
	}
	ui.wait("the batch page", 20*time.Second, `() => /^#\/batches\/[0-9a-f-]{36}$/.test(location.hash) && !!document.querySelector('#batch-summary [role=progressbar]')`)
	batchID := strings.TrimPrefix(ui.eval(`() => location.hash`).Str(), "#/batches/")
	first := ui.eval(`() => Number(document.querySelector('#batch-summary [role=progressbar]').getAttribute('aria-valuenow'))`).Int()
	if first >= 100 {
		ui.fatalf("progress was already %d%% when the batch page first showed; the slow page should keep it below", first)
	}
	ui.shot("dashboard-batch-running")
	seen := map[int]bool{first: true}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		v := ui.eval(`() => Number(document.querySelector('#batch-summary [role=progressbar]').getAttribute('aria-valuenow'))`).Int()
		seen[v] = true
		if v == 100 {
			break
		}
		if time.Now().After(deadline) {
			ui.fatalf("progress stuck at %d%% (seen %v)", v, seen)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !ui.eval(`() => window.__sameDocument === true`).Bool() {
		ui.fatalf("the page reloaded while the batch ran")
	}
	t.Logf("progress values seen without reload: %v", seen)
	var b batchResp
	s.do("GET", "/v1/batches/"+batchID, nil, &b)
	if b.Status != "completed" || b.Counts["succeeded"] != 4 {
		ui.fatalf("batch after 100%%: %s %v, want completed with 4 succeeded", b.Status, b.Counts)
	}
	ui.wait("the completed state", 10*time.Second, `() => document.querySelector('#live-status').textContent.startsWith('Completed')
		&& document.querySelectorAll('#job-rows tr[data-status=succeeded]').length === 4`)
	ui.wait("4 thumbnails", 30*time.Second, `() => {
		const imgs = [...document.querySelectorAll('#job-rows .thumb-box img')];
		return imgs.length === 4 && imgs.every(i => i.complete && i.naturalWidth > 0);
	}`)
	if got := ui.text("#batch-summary"); !strings.Contains(got, "suite=dashboard-e2e") || !strings.Contains(got, "100%") {
		ui.fatalf("summary lacks the label or 100%%: %q", got)
	}
	ui.shot("dashboard-batch")

	// Filter: only failed jobs -> none.
	ui.click(`a[data-filter="failed"]`)
	ui.wait("the failed filter", 10*time.Second, `() => location.hash.endsWith('?status=failed') && /No failed jobs/.test(document.querySelector('main').textContent)`)
	ui.click(`a[data-filter="all"]`)
	ui.wait("all jobs again", 10*time.Second, `() => document.querySelectorAll('#job-rows tr').length === 4`)

	// The tall job: every segment loaded, in order, at the size the API reports.
	ui.click(fmt.Sprintf(`#job-rows a.job-link[data-url=%q]`, tall))
	ui.wait("a job page", 10*time.Second, `() => location.hash.startsWith('#/jobs/')`)
	jobID := strings.TrimPrefix(ui.eval(`() => location.hash`).Str(), "#/jobs/")
	var job jobResp
	if code := s.do("GET", "/v1/jobs/"+jobID, nil, &job); code != http.StatusOK {
		t.Fatalf("GET job %s: %d", jobID, code)
	}
	if job.URL != tall {
		ui.fatalf("opened job %s (%s), want the tall page", jobID, job.URL)
	}
	var segs []int // widths then heights, in order
	for _, a := range job.Artifacts {
		if a.Kind == "screenshot" {
			segs = append(segs, a.Width, a.Height)
		}
	}
	if len(segs)/2 != 5 || job.Result == nil || job.Result.Segments.Captured != 5 {
		t.Fatalf("tall job has %d screenshots, result %+v; want 5", len(segs)/2, job.Result)
	}
	ui.wait("every segment image", 30*time.Second, `() => {
		const imgs = [...document.querySelectorAll('#segments img')];
		return imgs.length > 0 && imgs.every(i => i.complete);
	}`)
	got := ui.eval(`() => [...document.querySelectorAll('#segments img')].flatMap(i => [i.naturalWidth, i.naturalHeight])`)
	var gotSizes []int
	for _, v := range got.Arr() {
		gotSizes = append(gotSizes, v.Int())
	}
	if fmt.Sprint(gotSizes) != fmt.Sprint(segs) {
		ui.fatalf("segment images loaded as (w,h…) %v, API says %v", gotSizes, segs)
	}
	for i := 0; i < len(gotSizes); i += 2 {
		if gotSizes[i] == 0 {
			ui.fatalf("segment %d did not load", i/2+1)
		}
	}
	meta := ui.text("#job-meta")
	for _, want := range []string{"HTTP status", "200", "Final URL", tall, "Segments", "5", "Attempts"} {
		if !strings.Contains(meta, want) {
			ui.fatalf("job metadata lacks %q: %q", want, meta)
		}
	}
	if caps := ui.text("#segments"); !strings.Contains(caps, "Segment 1 of 5") || !strings.Contains(caps, "1280 × 720 px") {
		ui.fatalf("segment captions: %q", caps)
	}
	// Markdown preview through the presigned URL (storage on another origin).
	ui.click(`#outputs li[data-kind="markdown"] button`)
	ui.wait("the markdown preview", 20*time.Second, `() => {
		const li = document.querySelector('#outputs li[data-kind="markdown"]');
		return !!li.querySelector('pre[data-preview]') || /unavailable/.test(li.textContent);
	}`)
	if pre := ui.eval(`() => (document.querySelector('#outputs pre[data-preview="markdown"]') || {}).textContent || ''`).Str(); !strings.Contains(pre, "band 1") {
		ui.fatalf("markdown preview = %q, want the page's text", ui.text(`#outputs li[data-kind="markdown"]`))
	}
	ui.shot("dashboard-job")

	// The same pages at phone width and in dark mode, for a person to look at.
	ui.viewport(390, 844)
	ui.shot("dashboard-job-phone")
	if err := (proto.EmulationSetEmulatedMedia{Features: []*proto.EmulationMediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}).Call(ui.page); err != nil {
		t.Fatal(err)
	}
	ui.eval(`(id) => { location.hash = '#/batches/' + id; }`, batchID)
	ui.wait("the batch page again", 10*time.Second, `() => document.querySelectorAll('#job-rows .thumb-box img').length === 4`)
	ui.shot("dashboard-batch-phone-dark")
	ui.viewport(1280, 900)
	ui.eval(`() => { location.hash = '#/'; }`)
	ui.wait("the batch list", 10*time.Second, `() => document.querySelectorAll('#batch-list li').length === 1`)
	ui.shot("dashboard-list-dark")
}

// With keys on: the page asks for a key, a refused key brings the prompt back, a valid key
// shows the key's batches with their images (authenticated by the key cookie), and the queue
// UI opens for the key holder only.
func TestDashboardAuth(t *testing.T) {
	t.Parallel()
	const adminToken = "dashboard-test-admin-token-0123456789"
	s := startStack(t, "SNAPQ_AUTH=on", "SNAPQ_ADMIN_TOKEN="+adminToken)
	key := s.apiKey("dashboard")
	site := fixtureSite(t)
	var b batchResp
	if code, _ := s.doWith("POST", "/v1/batches", map[string]string{"Authorization": "Bearer " + key},
		map[string]any{"urls": []string{site + "/short"}, "labels": map[string]string{"who": "key-holder"}}, &b); code != http.StatusAccepted {
		t.Fatalf("submit: %d", code)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for b.Status != "completed" {
		if time.Now().After(deadline) {
			t.Fatalf("batch not completed: %+v", b)
		}
		time.Sleep(300 * time.Millisecond)
		s.doWith("GET", "/v1/batches/"+b.ID, map[string]string{"Authorization": "Bearer " + key}, nil, &b)
	}

	ui := openDashboard(t, s.api+"/")
	ui.wait("the key prompt", 20*time.Second, `() => document.querySelector('#key-dialog').open`)
	ui.shot("dashboard-key-prompt")

	// A wrong key: the API answers 401 and the prompt comes back, saying so.
	ui.setValue("#key-input", "sq_"+strings.Repeat("x", 43))
	ui.click("#key-save")
	ui.wait("the prompt again", 20*time.Second, `() => document.querySelector('#key-dialog').open && /refused/.test(document.querySelector('#key-reason').textContent)`)

	ui.setValue("#key-input", key)
	ui.click("#key-save")
	ui.wait("the batch list", 20*time.Second, `() => !document.querySelector('#key-dialog').open && document.querySelectorAll('#batch-list li').length === 1`)
	if got := ui.text("#batch-list"); !strings.Contains(got, "who=key-holder") {
		ui.fatalf("batch list: %q", got)
	}
	if stored := ui.eval(`() => localStorage.getItem('snapq.key')`).Str(); stored != key {
		ui.fatalf("localStorage key = %q", stored)
	}
	ui.click(`#batch-list a[href="#/batches/` + b.ID + `"]`)
	ui.wait("the thumbnail, loaded with the key cookie", 30*time.Second, `() => {
		const img = document.querySelector('#job-rows .thumb-box img');
		return !!img && img.complete && img.naturalWidth > 0;
	}`)
	ui.shot("dashboard-auth-batch")

	// Queue health: closed without a key, and to API keys; open with the admin token.
	resp, err := http.Get(s.api + "/admin/queues/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
		t.Fatalf("GET /admin/queues/ without a key: %d %q, want 401 with a Basic challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	// An API key sees no one's tasks (issue 12): 403; the admin token opens it.
	req, _ := http.NewRequest("GET", s.api+"/admin/queues/api/queues", nil)
	req.SetBasicAuth("admin", key)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("GET /admin/queues/api/queues with an API key: %d, want 403", resp.StatusCode)
	}
	req, _ = http.NewRequest("GET", s.api+"/admin/queues/api/queues", nil)
	req.SetBasicAuth("admin", adminToken)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /admin/queues/api/queues with the admin token: %d", resp.StatusCode)
	}
	// Read-only by default: even the admin cannot pause the capture queue.
	req, _ = http.NewRequest("POST", s.api+"/admin/queues/api/queues/capture:pause", nil)
	req.SetBasicAuth("admin", adminToken)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST pause on the read-only queue UI: %d, want 405", resp.StatusCode)
	}
	restore, err := ui.page.SetExtraHeaders([]string{"Authorization", "Bearer " + adminToken})
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	if err := ui.page.Navigate(s.api + "/admin/queues/"); err != nil {
		t.Fatal(err)
	}
	ui.wait("asynqmon", 30*time.Second, `() => document.title === 'Asynq - Monitoring' && /Queues/.test(document.body.innerText)`)
	ui.shot("dashboard-queues")
}

// The regression views against the real api, worker and services: a suite whose
// heading changed colour after its baseline was approved has a failed run; its page
// shows baseline, current and diff images (all loaded) and the overlay slider works
// from the keyboard; "Approve all" turns the run approved and makes the capture the
// new baseline.
func TestDashboardRegressionViews(t *testing.T) {
	t.Parallel()
	s := sharedStack(t)
	site := &changingSite{color: "#223344", blocks: 1}
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)

	var suite struct {
		ID string `json:"id"`
	}
	if code := s.do("POST", "/v1/suites", map[string]any{
		"name":     "marketing site",
		"targets":  []map[string]any{{"url": srv.URL + "/page", "name": "home"}},
		"schedule": map[string]any{"cron": "0 6 * * 1-5", "timezone": "Europe/Paris"},
	}, &suite); code != http.StatusCreated {
		t.Fatalf("create suite: status %d", code)
	}
	first := s.waitRun(s.startRun(suite.ID), 2*time.Minute)
	if code := s.do("POST", "/v1/runs/"+first.ID+"/approve", map[string]any{"all": true}, nil); code != http.StatusOK {
		t.Fatalf("approve the first run: status %d", code)
	}
	site.set("#cc2200", 1)
	failed := s.waitRun(s.startRun(suite.ID), 2*time.Minute)
	if failed.Status != "failed" || len(failed.Comparisons) != 1 {
		t.Fatalf("second run: %s: %s", failed.Status, statuses(failed))
	}
	cmp := failed.Comparisons[0]

	ui := openDashboard(t, s.api+"/#/suites")
	ui.wait("the suite list", 20*time.Second, `(id) => !!document.querySelector('#suite-table tr[data-suite="' + id + '"]')`, suite.ID)
	if row := ui.text(`#suite-table tr[data-suite="` + suite.ID + `"]`); !strings.Contains(row, "marketing site") ||
		!strings.Contains(row, "0 6 * * 1-5") || !strings.Contains(row, "failed") {
		ui.fatalf("suite row: %q", row)
	}
	ui.shot("dashboard-suites")
	ui.click(`#suite-table a[href="#/suites/` + suite.ID + `"]`)
	ui.wait("the run history", 10*time.Second, `(id) => !!document.querySelector('#run-rows tr[data-run="' + id + '"]')`, failed.ID)
	if n := ui.eval(`() => document.querySelectorAll('#run-rows tr[data-run]').length`).Int(); n != 2 {
		ui.fatalf("%d runs in the history, want 2", n)
	}
	// Flakiness: the one target, both runs linked oldest first; the first run
	// was approved, so the failure after it is no flip yet.
	ui.wait("the flakiness table", 10*time.Second, `() => document.querySelectorAll('#flaky-rows tr[data-target] a').length === 2`)
	if row := ui.text(`#flaky-rows tr[data-target]`); !strings.Contains(row, "0.00") || !strings.Contains(row, "failed") {
		ui.fatalf("flakiness row: %q", row)
	}
	if href := ui.eval(`() => document.querySelector('#flaky-rows tr[data-target] a:last-child').getAttribute('href')`).Str(); href != "#/runs/"+failed.ID {
		ui.fatalf("newest run link %q, want the failed run's", href)
	}
	ui.click(`#run-rows a[href="#/runs/` + failed.ID + `"]`)
	ui.wait("the run's images", 20*time.Second, `() => {
		const imgs = [...document.querySelectorAll('article[data-comparison] img')];
		return imgs.length > 0 && imgs.every(i => i.complete && i.naturalWidth > 0);
	}`)
	// Baseline, current and diff, plus the overlay's two layers.
	if n := ui.eval(`() => document.querySelectorAll('article[data-comparison] img').length`).Int(); n != 5 {
		ui.fatalf("%d images on the run page, want 5", n)
	}
	if w := ui.eval(`() => [...document.querySelectorAll('article[data-comparison] img')].map(i => i.naturalWidth).join(',')`).Str(); w != "1280,1280,1280,1280,1280" {
		ui.fatalf("image widths %s, want 1280 each", w)
	}
	if txt := ui.text(`article[data-comparison="` + cmp.ID + `"]`); !strings.Contains(txt, "failed") || !strings.Contains(txt, "% different") {
		ui.fatalf("comparison: %q", txt)
	}
	slider := ui.element(`article[data-comparison="` + cmp.ID + `"] input[type=range]`)
	if err := slider.Focus(); err != nil {
		ui.fatalf("focus slider: %v", err)
	}
	for range 5 {
		if err := ui.page.Keyboard.Press(input.ArrowRight); err != nil {
			ui.fatalf("press: %v", err)
		}
	}
	if clip := ui.eval(`(id) => document.querySelector('article[data-comparison="' + id + '"] .top-layer').style.clipPath`, cmp.ID).Str(); clip != "inset(0px 0px 0px 55%)" {
		ui.fatalf("overlay clip after 5 × ArrowRight = %q, want inset(0px 0px 0px 55%%)", clip)
	}
	if s := ui.text("#run-status"); s != "failed" {
		ui.fatalf("run status %q, want failed", s)
	}
	ui.shot("dashboard-run")

	ui.click("#approve-all")
	ui.wait("the run approved", 15*time.Second, `() => document.querySelector('#run-status').textContent === 'approved'`)
	if !ui.eval(`() => document.querySelector('#approve-all').disabled`).Bool() {
		ui.fatalf("Approve all still enabled with nothing left to approve")
	}
	ui.shot("dashboard-run-approved")

	var after runResp
	if code := s.do("GET", "/v1/runs/"+failed.ID, nil, &after); code != http.StatusOK || after.Status != "approved" ||
		!after.Comparisons[0].Approved {
		t.Fatalf("run after approving in the dashboard: %d %s %+v", code, after.Status, after.Comparisons)
	}
	var bl struct {
		Baselines []struct {
			Version    int    `json:"version"`
			ArtifactID string `json:"artifact_id"`
		} `json:"baselines"`
	}
	if code := s.do("GET", "/v1/suites/"+suite.ID+"/baselines", nil, &bl); code != http.StatusOK || len(bl.Baselines) != 1 ||
		bl.Baselines[0].Version != 2 {
		t.Fatalf("active baselines after approval: %d %+v", code, bl)
	}

	// The suite page lists both versions; restoring v1 makes it v3, active.
	ui.eval(`(id) => { location.hash = '#/suites/' + id; }`, suite.ID)
	ui.wait("the baselines", 15*time.Second, `() => document.querySelectorAll('#baseline-rows tr[data-baseline]').length === 2 &&
		[...document.querySelectorAll('#baseline-rows img')].every(i => i.complete && i.naturalWidth === 320 && i.src.endsWith('/thumbnail'))`)
	ui.click(`#baseline-rows button`)
	ui.wait("the restored version", 15*time.Second, `() => document.querySelectorAll('#baseline-rows tr[data-baseline]').length === 3`)
	if row := ui.text(`#baseline-rows tr[data-baseline]`); !strings.Contains(row, "v3") || !strings.Contains(row, "active") {
		ui.fatalf("first baseline row after restore: %q", row)
	}
	ui.shot("dashboard-baselines")
	if code := s.do("GET", "/v1/suites/"+suite.ID+"/baselines", nil, &bl); code != http.StatusOK || len(bl.Baselines) != 1 ||
		bl.Baselines[0].Version != 3 || bl.Baselines[0].ArtifactID != first.Comparisons[0].Current.ArtifactID {
		t.Fatalf("active baseline after restoring v1: %d %+v", code, bl)
	}
}

// The auth profiles page lists a profile (name, origins, version, last
// login) and "Test login now" runs its recipe and shows the action log with
// the password masked; a journey's run page shows its checkpoints in order
// with the steps between them, the failed click included.
func TestDashboardAuthProfilesAndJourney(t *testing.T) {
	t.Parallel()
	password := randomPassword()
	app, site := loginApp(t, password, time.Hour)
	app.BreakListLink(true)
	s := sharedStack(t)
	var p profileResp
	if code := s.do("POST", "/v1/auth-profiles", recipe("shop", site, password), &p); code != http.StatusCreated {
		t.Fatalf("create profile: %d", code)
	}
	var suite struct {
		ID string `json:"id"`
	}
	if code := s.do("POST", "/v1/suites", map[string]any{"name": "orders", "targets": []map[string]any{{
		"url": site + "/list", "name": "orders", "viewports": []map[string]any{{"width": 800, "height": 600}},
		"options": map[string]any{"auth_profile": "shop", "screenshot": map[string]any{"mode": "viewport"}, "actions": []map[string]any{
			{"type": "screenshot", "name": "list"},
			{"type": "click", "selector": "#detail-link", "timeout_ms": 1000},
			{"type": "wait_for_navigation"},
			{"type": "screenshot", "name": "detail"},
		}},
	}}}, &suite); code != http.StatusCreated {
		t.Fatalf("create suite: %d", code)
	}
	run := s.waitRun(s.startRun(suite.ID), 2*time.Minute)

	ui := openDashboard(t, s.api+"/#/auth-profiles")
	row := `#profile-table tr[data-profile="` + p.ID + `"]`
	ui.wait("the profile list", 20*time.Second, `(sel) => !!document.querySelector(sel)`, row)
	if txt := ui.text(row); !strings.Contains(txt, "shop") || !strings.Contains(txt, site) {
		ui.fatalf("profile row: %q", txt)
	}
	before := ui.text(row + ` td[data-label="Version"]`)
	ui.click(row + " button.test-login")
	ui.wait("the test login's log", 60*time.Second, `() => !!document.querySelector('.test-result [data-testid=test-log] tbody tr')`)
	res := ui.text(".test-result")
	if !strings.Contains(res, "logged in") || !strings.Contains(res, "#password") || !strings.Contains(res, "••••") || strings.Contains(res, password) {
		ui.fatalf("test login result (version before %s): %q", before, res)
	}
	ui.shot("dashboard-auth-profiles")

	ui.eval(`(id) => { location.hash = '#/runs/' + id; }`, run.ID)
	ui.wait("the journey's step logs", 20*time.Second, `() => document.querySelectorAll('[data-testid=journey-steps]').length >= 1`)
	if got := ui.eval(`() => [...document.querySelectorAll('.journey li[data-checkpoint]')].map(li => li.dataset.checkpoint).join(',')`).Str(); got != "list,detail,final" {
		ui.fatalf("checkpoints in the run view: %q, want list,detail,final", got)
	}
	steps := ui.text(`.journey li[data-checkpoint="detail"] [data-testid=journey-steps]`)
	if !strings.Contains(steps, "#detail-link") || !strings.Contains(steps, "failed") {
		ui.fatalf("the steps before the detail checkpoint: %q", steps)
	}
	if txt := ui.text(`.journey li[data-checkpoint="detail"] article`); !strings.Contains(txt, "error") || !strings.Contains(txt, "step 1 (click #detail-link)") {
		ui.fatalf("the detail checkpoint: %q", txt)
	}
	ui.shot("dashboard-journey-run")
}

// TestDashboardNewComparisonNoRatio: a suite's first run has no baseline; its comparison
// row says there is nothing to compare, not "0.000% different (0 px; threshold 0.000%)"
// (issue 26 item 8).
func TestDashboardNewComparisonNoRatio(t *testing.T) {
	t.Parallel()
	s := sharedStack(t)
	site := &changingSite{color: "#223344", blocks: 1}
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	var suite struct {
		ID string `json:"id"`
	}
	if code := s.do("POST", "/v1/suites", map[string]any{"name": "first run",
		"targets": []map[string]any{{"url": srv.URL + "/page", "name": "home"}}}, &suite); code != http.StatusCreated {
		t.Fatalf("create suite: status %d", code)
	}
	run := s.waitRun(s.startRun(suite.ID), 2*time.Minute)
	if len(run.Comparisons) == 0 || run.Comparisons[0].Status != "new" {
		t.Fatalf("first run: %s", statuses(run))
	}
	cmp := run.Comparisons[0]
	ui := openDashboard(t, s.api+"/#/runs/"+run.ID)
	sel := `article[data-comparison="` + cmp.ID + `"]`
	ui.wait("the new comparison", 20*time.Second, `(sel) => !!document.querySelector(sel)`, sel)
	txt := ui.text(sel)
	if !strings.Contains(txt, "nothing to compare: no baseline yet") || strings.Contains(txt, "% different") {
		ui.fatalf("new comparison reads %q, want it to say there is nothing to compare", txt)
	}
}
