package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/snapq/snapq/internal/testenv"
)

// changingSite serves pages whose look the test changes between runs.
//
// /page is a stack of 720 px blocks (one per viewport height at 1280x720, so
// segments line up with blocks) with a heading at a known box in block 1.
// /anim has a CSS animation and a transition running forever.
type changingSite struct {
	mu     sync.Mutex
	color  string
	blocks int
}

// Heading box in CSS pixels (page coordinates).
const headX, headY, headW, headH = 60, 100, 480, 64

func (s *changingSite) set(color string, blocks int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.color, s.blocks = color, blocks
}

func (s *changingSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	color, blocks := s.color, s.blocks
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	switch r.URL.Path {
	case "/page":
		fmt.Fprintf(w, `<!doctype html><html><head><style>
			body { margin: 0; font-family: sans-serif; }
			.b { height: 720px; position: relative; }
			#title { position: absolute; left: %dpx; top: %dpx; width: %dpx; height: %dpx; margin: 0;
				background: %s; color: white; font-size: 40px; line-height: 64px; }
		</style></head><body>`, headX, headY, headW, headH, color)
		shades := []string{"#f4f4f4", "#dde7f0", "#e9f0dd", "#f0e3dd", "#e3ddf0"}
		for i := range blocks {
			fmt.Fprintf(w, `<div class="b" style="background:%s"><p style="margin:0;padding:300px 0 0 60px">Block %d</p>`, shades[i%len(shades)], i+1)
			if i == 0 {
				fmt.Fprint(w, `<h1 id="title">Release notes</h1>`)
			}
			fmt.Fprint(w, `</div>`)
		}
		fmt.Fprint(w, `</body></html>`)
	case "/anim":
		fmt.Fprint(w, `<!doctype html><html><head><style>
			body { margin: 0; font-family: sans-serif; }
			@keyframes spin { from { transform: rotate(0deg); } to { transform: rotate(360deg); } }
			@keyframes pulse { 0% { background: #c00; } 50% { background: #00c; } 100% { background: #0c0; } }
			.spin { width: 120px; height: 120px; margin: 80px; background: #333; animation: spin 0.7s linear infinite; }
			.pulse { width: 300px; height: 40px; animation: pulse 0.5s infinite; transition: width 3s; }
		</style></head><body><div class="spin"></div><div class="pulse" id="p"></div>
		<input autofocus value="caret here">
		<script>setTimeout(() => { document.getElementById('p').style.width = '900px'; }, 10);</script>
		</body></html>`)
	default:
		http.NotFound(w, r)
	}
}

type comparisonResp struct {
	ID         string    `json:"id"`
	Target     string    `json:"target"`
	Viewport   string    `json:"viewport"`
	Segment    int       `json:"segment"`
	Status     string    `json:"status"`
	DiffPixels int64     `json:"diff_pixels"`
	DiffRatio  float64   `json:"diff_ratio"`
	Message    string    `json:"message"`
	DiffMode   string    `json:"diff_mode"`
	ShiftedPx  int       `json:"shifted_px"`
	Hunks      []hunk    `json:"hunks"`
	Approved   bool      `json:"approved"`
	Baseline   *imageRef `json:"baseline"`
	Current    *imageRef `json:"current"`
	Diff       *imageRef `json:"diff"`
}

// hunk is a run of rows inserted, removed or changed (page image pixels;
// a: baseline, b: current capture).
type hunk struct {
	Kind   string `json:"kind"`
	AStart int    `json:"a_start"`
	AEnd   int    `json:"a_end"`
	BStart int    `json:"b_start"`
	BEnd   int    `json:"b_end"`
}

// imageRef is a comparison's baseline, current or diff image.
type imageRef struct {
	ArtifactID string `json:"artifact_id"`
	URL        string `json:"url"`
	Width      int    `json:"width"`
	Height     int    `json:"height"`
}

type runResp struct {
	ID          string           `json:"id"`
	SuiteID     string           `json:"suite_id"`
	BatchID     string           `json:"batch_id"`
	Trigger     string           `json:"trigger"`
	Status      string           `json:"status"`
	Counts      map[string]int   `json:"counts"`
	Comparisons []comparisonResp `json:"comparisons"`
}

func (s *stack) startRun(suiteID string) string {
	s.t.Helper()
	var r runResp
	if code := s.do("POST", "/v1/suites/"+suiteID+"/runs", map[string]any{}, &r); code != http.StatusAccepted {
		s.t.Fatalf("start run: status %d", code)
	}
	return r.ID
}

func (s *stack) waitRun(id string, timeout time.Duration) runResp {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var r runResp
		if code := s.do("GET", "/v1/runs/"+id, nil, &r); code != http.StatusOK {
			s.t.Fatalf("GET run: status %d", code)
		}
		if r.Status != "running" {
			return r
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("run %s still running after %s: %v", id, timeout, r.Counts)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// byKey indexes comparisons as "target#segment".
func byKey(r runResp) map[string]comparisonResp {
	m := map[string]comparisonResp{}
	for _, c := range r.Comparisons {
		m[fmt.Sprintf("%s#%d", c.Target, c.Segment)] = c
	}
	return m
}

func statuses(r runResp) string {
	var b bytes.Buffer
	for _, c := range r.Comparisons {
		fmt.Fprintf(&b, "%s#%d=%s(%d px %s) ", c.Target, c.Segment, c.Status, c.DiffPixels, c.Message)
	}
	return b.String()
}

// The regression loop through the API: first run needs review, approve,
// unchanged passes with 0 pixels, a colour change fails with the diff where
// the heading is, an ignore selector passes it again, a taller page adds a new
// segment, and an animated page passes every time under stabilization.
func TestRegressionEndToEnd(t *testing.T) {
	t.Parallel()
	s := sharedStack(t)
	site := &changingSite{color: "#223344", blocks: 2}
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)

	var bad errResp
	code := s.do("POST", "/v1/suites", map[string]any{"name": "x", "targets": []map[string]any{{"url": srv.URL + "/page"}},
		"schedule": map[string]any{"cron": "every minute"}}, &bad)
	if code != http.StatusBadRequest || bad.Error.Field != "schedule.cron" {
		t.Fatalf("bad cron: status %d, %+v", code, bad.Error)
	}

	// The suite's webhook receives each run's summary, signed.
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	hooks := make(chan []byte, 10)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := verifyWebhook(secret, r.Header, body); err != nil {
			t.Errorf("webhook signature: %v", err)
		}
		hooks <- body
	}))
	t.Cleanup(receiver.Close)

	var suite struct {
		ID string `json:"id"`
	}
	code = s.do("POST", "/v1/suites", map[string]any{
		"name": "site",
		"targets": []map[string]any{
			{"url": srv.URL + "/page", "name": "home"},
			{"url": srv.URL + "/anim", "name": "anim"},
		},
		"webhook": map[string]any{"url": receiver.URL + "/hook", "secret": secret},
	}, &suite)
	if code != http.StatusCreated {
		t.Fatalf("create suite: status %d", code)
	}

	// 1. First run: every segment is new.
	r1 := s.waitRun(s.startRun(suite.ID), 2*time.Minute)
	if r1.Status != "needs_review" || len(r1.Comparisons) != 3 || r1.Counts["new"] != 3 {
		t.Fatalf("first run: %s %v: %s", r1.Status, r1.Counts, statuses(r1))
	}
	for _, c := range r1.Comparisons {
		if c.Status != "new" || c.Current == nil || c.Current.Width != 1280 || c.Current.Height != 720 || c.Baseline != nil {
			t.Fatalf("first run comparison %+v", c)
		}
	}
	select {
	case body := <-hooks:
		var ev struct {
			Type string `json:"type"`
			Data struct {
				ID     string         `json:"id"`
				Status string         `json:"status"`
				Counts map[string]int `json:"counts"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &ev); err != nil || ev.Type != "run.completed" || ev.Data.ID != r1.ID ||
			ev.Data.Status != "needs_review" || ev.Data.Counts["new"] != 3 {
			t.Fatalf("run webhook body %s (%v)", body, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no run.completed webhook within 30 s")
	}
	var approved runResp
	if code := s.do("POST", "/v1/runs/"+r1.ID+"/approve", map[string]any{"all": true}, &approved); code != http.StatusOK {
		t.Fatalf("approve: status %d", code)
	}
	if approved.Status != "approved" {
		t.Fatalf("after approve: %s: %s", approved.Status, statuses(approved))
	}
	for _, c := range approved.Comparisons {
		if !c.Approved {
			t.Fatalf("comparison %s#%d not approved", c.Target, c.Segment)
		}
	}

	// 2. Unchanged: passed, 0 differing pixels, also for the animated page.
	r2 := s.waitRun(s.startRun(suite.ID), 2*time.Minute)
	if r2.Status != "passed" || r2.Counts["passed"] != 3 {
		t.Fatalf("unchanged run: %s: %s", r2.Status, statuses(r2))
	}
	for _, c := range r2.Comparisons {
		if c.DiffPixels != 0 || c.Baseline == nil || c.Diff != nil {
			t.Fatalf("unchanged comparison %+v", c)
		}
	}

	// 3. Heading colour changed: home#1 fails, the diff's red pixels lie on the heading.
	site.set("#cc2200", 2)
	r3 := s.waitRun(s.startRun(suite.ID), 2*time.Minute)
	k3 := byKey(r3)
	home1 := k3["home#1"]
	if r3.Status != "failed" || home1.Status != "failed" || k3["home#2"].Status != "passed" || k3["anim#1"].Status != "passed" {
		t.Fatalf("colour change run: %s: %s", r3.Status, statuses(r3))
	}
	if home1.Diff == nil || home1.Diff.Width != 1280 || home1.Diff.Height != 720 {
		t.Fatalf("home#1 diff image %+v", home1.Diff)
	}
	img, err := png.Decode(bytes.NewReader(download(t, home1.Diff.URL)))
	if err != nil {
		t.Fatal(err)
	}
	box := redBox(img)
	heading := image.Rect(headX, headY, headX+headW, headY+headH)
	if box.Empty() || !box.In(heading.Inset(-2)) || box.Dx() < headW/2 || box.Dy() < headH/2 {
		t.Fatalf("highlighted region %v, want inside and covering most of the heading %v", box, heading)
	}
	if want := int64(headW * headH / 2); home1.DiffPixels < want {
		t.Fatalf("home#1 diff_pixels = %d, want at least %d (the heading's area)", home1.DiffPixels, want)
	}

	// 4. Ignore the heading: the same change passes.
	var patched struct {
		Ignore struct {
			Selectors []string `json:"selectors"`
		} `json:"ignore"`
	}
	if code := s.do("PATCH", "/v1/suites/"+suite.ID, map[string]any{"ignore": map[string]any{"selectors": []string{"#title"}}}, &patched); code != http.StatusOK || len(patched.Ignore.Selectors) != 1 {
		t.Fatalf("patch ignore: status %d, %+v", code, patched)
	}
	r4 := s.waitRun(s.startRun(suite.ID), 2*time.Minute)
	if r4.Status != "passed" {
		t.Fatalf("ignored heading run: %s: %s", r4.Status, statuses(r4))
	}

	// 5. One more block: segments 1-2 pass, segment 3 is new.
	site.set("#223344", 3)
	r5 := s.waitRun(s.startRun(suite.ID), 2*time.Minute)
	k5 := byKey(r5)
	if r5.Status != "needs_review" || k5["home#3"].Status != "new" || k5["home#1"].Status != "passed" || k5["home#2"].Status != "passed" {
		t.Fatalf("grown page run: %s: %s", r5.Status, statuses(r5))
	}

	// History lists the five runs newest first.
	var hist struct {
		Runs []runResp `json:"runs"`
	}
	if code := s.do("GET", "/v1/suites/"+suite.ID+"/runs", nil, &hist); code != http.StatusOK || len(hist.Runs) != 5 || hist.Runs[0].ID != r5.ID {
		t.Fatalf("run history: status %d, %d runs", code, len(hist.Runs))
	}
}

// redBox is the bounding box of pure-red diff pixels.
func redBox(img image.Image) image.Rectangle {
	var box image.Rectangle
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r>>8 > 200 && g>>8 < 60 && bl>>8 < 60 {
				box = box.Union(image.Rect(x, y, x+1, y+1))
			}
		}
	}
	return box
}

// A schedule of every minute fires through asynq's scheduler in the api
// (suites created after the api started, picked up without a restart) and
// starts one run although two api replicas schedule it; a disabled suite with
// the same schedule does not run.
func TestRegressionSchedule(t *testing.T) {
	t.Parallel()
	s := startStack(t, "SNAPQ_SCHEDULE_SYNC=1s", "SNAPQ_MIN_SCHEDULE_INTERVAL=1m")
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	replica := &testenv.Procs{BinDir: binDir, LogDir: t.TempDir(),
		Env: append(append([]string(nil), s.procs.Env...), "SNAPQ_HTTP_ADDR=127.0.0.1:"+port)}
	t.Cleanup(replica.StopAll)
	if err := replica.Start("api"); err != nil {
		t.Fatal(err)
	}
	if err := testenv.WaitReady("http://127.0.0.1:"+port, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	site := &changingSite{color: "#223344", blocks: 1}
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)

	ids := map[bool]string{}
	for _, enabled := range []bool{true, false} {
		var suite struct {
			ID string `json:"id"`
		}
		code := s.do("POST", "/v1/suites", map[string]any{
			"name": fmt.Sprintf("every minute (enabled=%v)", enabled), "enabled": enabled,
			"targets":  []map[string]any{{"url": srv.URL + "/page", "name": "home"}},
			"schedule": map[string]any{"cron": "* * * * *", "timezone": "Europe/Paris"},
		}, &suite)
		if code != http.StatusCreated {
			t.Fatalf("create suite: status %d", code)
		}
		ids[enabled] = suite.ID
	}
	runsOf := func(id string) []runResp {
		var hist struct {
			Runs []runResp `json:"runs"`
		}
		if code := s.do("GET", "/v1/suites/"+id+"/runs", nil, &hist); code != http.StatusOK {
			t.Fatalf("run history: status %d", code)
		}
		return hist.Runs
	}
	deadline := time.Now().Add(80 * time.Second)
	for len(runsOf(ids[true])) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no scheduled run within 80 s of a schedule of every minute")
		}
		time.Sleep(time.Second)
	}
	time.Sleep(3 * time.Second) // the other replica's and the disabled suite's runs would have started by now
	runs := runsOf(ids[true])
	if len(runs) != 1 || runs[0].Trigger != "schedule" {
		t.Fatalf("enabled suite runs with two api replicas scheduling: %+v", runs)
	}
	if n := len(runsOf(ids[false])); n != 0 {
		t.Fatalf("disabled suite has %d runs", n)
	}
	if r := s.waitRun(runs[0].ID, 2*time.Minute); r.Status != "needs_review" || r.Counts["new"] != 1 {
		t.Fatalf("scheduled run: %s %v", r.Status, r.Counts)
	}
}
