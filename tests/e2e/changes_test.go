package e2e

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// changesSite serves /app, a page whose heading, button, card and image a
// test changes, and /p/N, pages with a clock in the header.
type changesSite struct {
	mu      sync.Mutex
	changed bool   // /app: the heading's text, the button's colour, the card 30 px down, no image
	clock   string // the header clock of /p/N
	edited  int    // /p/N whose heading changed; -1: none
}

func (s *changesSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	changed, clock, edited := s.changed, s.clock, s.edited
	s.mu.Unlock()
	w.Header().Set("Cache-Control", "no-store")
	if r.URL.Path == "/hero.png" {
		img := image.NewNRGBA(image.Rect(0, 0, 120, 80))
		for y := range 80 {
			for x := range 120 {
				img.SetNRGBA(x, y, color.NRGBA{uint8(x * 2), uint8(y * 3), 150, 255})
			}
		}
		var b bytes.Buffer
		_ = png.Encode(&b, img)
		w.Header().Set("Content-Type", "image/png")
		w.Write(b.Bytes())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	const style = `<style>body{margin:0;font:16px/20px sans-serif}h1{margin:10px;font-size:24px;line-height:30px}
		header{height:30px;padding:4px 10px;background:#eee}.clock{display:inline-block;width:60px;font-family:monospace}</style>`
	if r.URL.Path == "/app" {
		title, bg, top, img := "Welcome", "#2050c0", 0, `<img id="hero" src="/hero.png" width="120" height="80" alt="">`
		if changed {
			title, bg, top, img = "Goodbye", "#c02020", 30, ""
		}
		fmt.Fprintf(w, `<!doctype html><html><head>%s</head><body>
			<h1 id="title">%s</h1>
			<div style="height:60px;padding:10px"><button data-testid="buy" style="background:%s;color:white;border:0;width:100px;height:30px">Buy</button></div>
			<div style="height:200px;position:relative"><div data-testid="card" style="position:absolute;left:20px;top:%dpx;width:200px;height:100px;background:#ddd"><h3 style="margin:8px">Card</h3></div></div>
			<div style="height:100px;padding-left:300px">%s</div>
			</body></html>`, style, title, bg, top, img)
		return
	}
	var n int
	fmt.Sscanf(r.URL.Path, "/p/%d", &n)
	heading := fmt.Sprintf("Page %d", n)
	if n == edited {
		heading = fmt.Sprintf("Page %d, edited", n)
	}
	fmt.Fprintf(w, `<!doctype html><html><head>%s</head><body><header>Shop <span class="clock">%s</span></header>
		<h1>%s</h1></body></html>`, style, clock, heading)
}

func (s *changesSite) set(f func(*changesSite)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

type changeResp struct {
	Kind         string   `json:"kind"`
	Selector     string   `json:"selector"`
	DX           int      `json:"dx"`
	DY           int      `json:"dy"`
	Properties   []string `json:"properties"`
	SuppressedBy string   `json:"suppressed_by"`
	Box          struct {
		X, Y, Width, Height int
	} `json:"box"`
	Before *struct {
		Text string `json:"text"`
	} `json:"before"`
	After *struct {
		Text string `json:"text"`
	} `json:"after"`
}

func (s *stack) changesOf(cmpID string) []changeResp {
	s.t.Helper()
	var out struct {
		Changes []changeResp `json:"changes"`
	}
	if code := s.do("GET", "/v1/comparisons/"+cmpID+"/changes", nil, &out); code != http.StatusOK {
		s.t.Fatalf("GET changes of %s: status %d", cmpID, code)
	}
	return out.Changes
}

func (s *stack) approveAll(runID string) {
	s.t.Helper()
	if code := s.do("POST", "/v1/runs/"+runID+"/approve", map[string]any{"all": true}, nil); code != http.StatusOK {
		s.t.Fatalf("approve: status %d", code)
	}
}

// The proofs of changes explained by elements, through the API with
// Chromium. Attribution: a heading's text, a button's colour, a card moved
// 30 px and a removed image are four changes of the right kinds and
// selectors. Rules: a clock in the header of 20 pages × 2 viewports (4 in
// `make test`) fails all 40; one dynamic_text rule (previewed first) makes
// all 40 pass on the next run while a real text change elsewhere still fails.
// The two are independent phases on one stack and site.
func TestChangesExplainedByElements(t *testing.T) {
	t.Parallel()
	s := sharedStack(t)
	site := &changesSite{clock: "10:41", edited: -1}
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	t.Run("attribution", func(t *testing.T) { changesAttribution(s.as(t), site, srv.URL) })
	// Rules: SNAPQ_PROOF_SCALE=full (`make proofs`) runs 20 pages.
	t.Run("rules", func(t *testing.T) { changesClockRule(s.as(t), site, srv.URL, proofScale(t, 4, 20)) })
}

// changesAttribution: a heading's text, a button's colour, a card moved
// 30 px and a removed image are four changes of the right kinds and selectors.
func changesAttribution(s *stack, site *changesSite, base string) {
	t := s.t
	var app struct {
		ID string `json:"id"`
	}
	if code := s.do("POST", "/v1/suites", map[string]any{
		"name":    "app",
		"targets": []map[string]any{{"url": base + "/app", "name": "app", "viewports": []map[string]any{{"width": 640, "height": 480}}}},
		"options": map[string]any{"screenshot": map[string]any{"mode": "viewport"}},
	}, &app); code != http.StatusCreated {
		t.Fatalf("create suite: status %d", code)
	}
	start := time.Now()
	s.approveAll(s.waitRun(s.startRun(app.ID), time.Minute).ID)
	site.set(func(s *changesSite) { s.changed = true })
	r := s.waitRun(s.startRun(app.ID), time.Minute)
	if r.Status != "failed" || len(r.Comparisons) != 1 {
		t.Fatalf("changed app: %s", statuses(r))
	}
	got := s.changesOf(r.Comparisons[0].ID)
	var brief []string
	for _, c := range got {
		brief = append(brief, fmt.Sprintf("%s %s %d,%d %v", c.Kind, c.Selector, c.DX, c.DY, c.Properties))
	}
	sort.Strings(brief)
	want := []string{
		`moved [data-testid="card"] 0,30 []`,
		`removed #hero 0,0 []`,
		`style_changed [data-testid="buy"] 0,0 [background-color]`,
		`text_changed #title 0,0 []`,
	}
	if strings.Join(brief, "\n") != strings.Join(want, "\n") {
		t.Fatalf("changes:\n%s\nwant:\n%s", strings.Join(brief, "\n"), strings.Join(want, "\n"))
	}
	for _, c := range got {
		if c.Kind == "text_changed" && (c.Before == nil || c.After == nil || c.Before.Text != "Welcome" || c.After.Text != "Goodbye") {
			t.Errorf("text change before/after: %+v %+v", c.Before, c.After)
		}
	}
	t.Logf("attribution: 2 runs in %s", time.Since(start).Round(time.Millisecond))
}

// changesClockRule: a clock in the header of pages × 2 viewports fails every
// comparison; one dynamic_text rule (previewed first) makes them all pass on
// the next run while a real text change on the last page still fails it.
func changesClockRule(s *stack, site *changesSite, base string, pages int) {
	t := s.t
	total, edited := 2*pages, pages-1
	editedName := fmt.Sprintf("p%d", edited)
	start := time.Now()
	var targets []map[string]any
	for i := range pages {
		targets = append(targets, map[string]any{"url": fmt.Sprintf("%s/p/%d", base, i), "name": fmt.Sprintf("p%d", i),
			"viewports": []map[string]any{{"width": 320, "height": 120}, {"width": 360, "height": 120}}})
	}
	var clock struct {
		ID string `json:"id"`
	}
	if code := s.do("POST", "/v1/suites", map[string]any{"name": "clock", "targets": targets,
		"options": map[string]any{"screenshot": map[string]any{"mode": "viewport"}}}, &clock); code != http.StatusCreated {
		t.Fatalf("create clock suite: status %d", code)
	}
	s.approveAll(s.waitRun(s.startRun(clock.ID), 2*time.Minute).ID)
	site.set(func(s *changesSite) { s.clock = "10:42" })
	r := s.waitRun(s.startRun(clock.ID), 2*time.Minute)
	if r.Counts["failed"] != total {
		t.Fatalf("clock moved on: want %d failed, got %s", total, statuses(r))
	}
	if cs := s.changesOf(r.Comparisons[0].ID); len(cs) != 1 || cs[0].Kind != "text_changed" || cs[0].Selector != "body > header > span.clock" ||
		cs[0].Before.Text != "10:41" || cs[0].After.Text != "10:42" {
		t.Fatalf("clock change: %+v", cs)
	}

	rule := map[string]any{"kind": "dynamic_text", "selector": "header .clock", "pattern": `\d{1,2}:\d{2}`}
	var bad struct {
		Error struct {
			Field string `json:"field"`
		} `json:"error"`
	}
	if code := s.do("POST", "/v1/suites/"+clock.ID+"/rules", map[string]any{"kind": "dynamic_text", "selector": "header .clock", "pattern": `(\d`}, &bad); code != http.StatusBadRequest || bad.Error.Field != "pattern" {
		t.Fatalf("bad pattern: status %d, field %q", code, bad.Error.Field)
	}
	var preview struct {
		WouldSuppress int `json:"would_suppress"`
		Changes       int `json:"changes"`
	}
	if code := s.do("POST", "/v1/suites/"+clock.ID+"/rules/preview", rule, &preview); code != http.StatusOK || preview.WouldSuppress != total || preview.Changes != total {
		t.Fatalf("preview: status %d, %+v; want %d of %d", code, preview, total, total)
	}
	var created struct {
		ID string `json:"id"`
	}
	if code := s.do("POST", "/v1/suites/"+clock.ID+"/rules", rule, &created); code != http.StatusCreated {
		t.Fatalf("create rule: status %d", code)
	}
	site.set(func(s *changesSite) { s.clock, s.edited = "11:07", edited })
	r = s.waitRun(s.startRun(clock.ID), 2*time.Minute)
	for _, c := range r.Comparisons {
		want := "passed"
		if c.Target == editedName {
			want = "failed"
		}
		if c.Status != want {
			t.Fatalf("with the rule, %s@%s is %s, want %s: %s", c.Target, c.Viewport, c.Status, want, statuses(r))
		}
		if c.Target == editedName {
			var kinds []string
			for _, ch := range s.changesOf(c.ID) {
				kinds = append(kinds, ch.Kind+" "+ch.Selector+" "+ch.SuppressedBy)
			}
			sort.Strings(kinds)
			if len(kinds) != 2 || kinds[0] != "text_changed body > h1 " || kinds[1] != "text_changed body > header > span.clock "+created.ID {
				t.Fatalf("%s's changes: %q", editedName, kinds)
			}
		}
	}
	if len(r.Comparisons) != total {
		t.Fatalf("%d comparisons, want %d", len(r.Comparisons), total)
	}
	var rules struct {
		Rules []struct {
			ID         string `json:"id"`
			Suppressed int    `json:"suppressed"`
		} `json:"rules"`
	}
	if code := s.do("GET", "/v1/suites/"+clock.ID+"/rules", nil, &rules); code != http.StatusOK || len(rules.Rules) != 1 || rules.Rules[0].Suppressed != total {
		t.Fatalf("rules: status %d, %+v; want one with %d suppressed", code, rules, total)
	}
	if code := s.do("DELETE", "/v1/rules/"+created.ID, nil, nil); code != http.StatusNoContent {
		t.Fatalf("delete rule: status %d", code)
	}
	t.Logf("clock: 3 runs of %d captures in %s", total, time.Since(start).Round(time.Millisecond))
}
