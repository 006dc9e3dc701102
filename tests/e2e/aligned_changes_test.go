package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// shiftSite serves a page about four 300 px segments tall: a heading, text
// blocks, a news heading and a clock further down; a promo block can be
// inserted near the top (moving everything below it 80 px down).
type shiftSite struct {
	mu    sync.Mutex
	promo bool
	news  string
	clock string
}

func (s *shiftSite) set(f func(*shiftSite)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

func (s *shiftSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	promo, news, clock := s.promo, s.news, s.clock
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><style>
		body { margin: 0; font: 16px/20px sans-serif; }
		h1 { margin: 0; height: 60px; padding: 10px; font-size: 28px; line-height: 40px; }
		#promo { height: 80px; background: #ffcc00; }
		.blk { margin: 0; height: 100px; padding: 10px 20px; }
		h2 { margin: 0; height: 40px; padding: 10px 20px; font-size: 22px; line-height: 30px; }
		#time { height: 40px; padding: 0 20px; line-height: 40px; }
	</style></head><body><h1 id="top">Shop</h1>`)
	if promo {
		b.WriteString(`<div id="promo">Summer sale</div>`)
	}
	blk := func(i int) {
		fmt.Fprintf(&b, `<p class="blk">Block %d: the quick brown fox %d jumps over %d lazy dogs</p>`, i, i*7, i*13)
	}
	blk(1)
	blk(2)
	fmt.Fprintf(&b, `<h2 id="news">%s</h2>`, news)
	blk(3)
	blk(4)
	fmt.Fprintf(&b, `<div id="time">Updated at <span class="clock">%s</span></div>`, clock)
	blk(5)
	b.WriteString(`<div style="height:200px"></div></body></html>`)
	w.Write([]byte(b.String()))
}

// The issue's proof "change a word inside a shifted region: that change is
// found and attributed", through the API with Chromium, in aligned mode: a
// promo inserted near the top moves everything 80 px down while the news
// heading further down changes its words. The heading's segment fails with
// exactly one change, text_changed of #news with both texts; the promo is
// added; nothing shifted is reported moved. Then an ignore_element rule on
// the promo and a dynamic_text rule on the clock (in the shifted region)
// make the page pass while the clock keeps ticking.
func TestAlignedChangesUnderShift(t *testing.T) {
	t.Parallel()
	s := sharedStack(t)
	site := &shiftSite{news: "News today", clock: "10:41"}
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	var suite struct {
		ID string `json:"id"`
	}
	if code := s.do("POST", "/v1/suites", map[string]any{
		"name":    "shift",
		"targets": []map[string]any{{"url": srv.URL + "/", "name": "shift", "viewports": []map[string]any{{"width": 400, "height": 300}}}},
		"options": map[string]any{"screenshot": map[string]any{"max_segments": 8}},
	}, &suite); code != http.StatusCreated {
		t.Fatalf("create suite: status %d", code)
	}
	start := time.Now()
	r1 := s.waitRun(s.startRun(suite.ID), time.Minute)
	if r1.Counts["new"] != 4 {
		t.Fatalf("first run: %s", statuses(r1))
	}
	s.approveAll(r1.ID)

	site.set(func(s *shiftSite) { s.promo, s.news = true, "News tonight" })
	r2 := s.waitRun(s.startRun(suite.ID), time.Minute)
	if r2.Status != "failed" {
		t.Fatalf("promo and heading: %s", statuses(r2))
	}
	var newsSeg, promoSeg int
	for _, c := range r2.Comparisons {
		if c.DiffMode != "aligned" {
			t.Fatalf("segment %d compared %s", c.Segment, c.DiffMode)
		}
		changes := s.changesOf(c.ID)
		for _, ch := range changes {
			switch {
			case ch.Kind == "moved":
				t.Errorf("segment %d: a shifted element reported moved: %+v", c.Segment, ch)
			case ch.Kind == "added" && ch.Selector == "#promo":
				promoSeg = c.Segment
			case ch.Selector == "#news":
				newsSeg = c.Segment
				if c.Status != "failed" || len(changes) != 1 || ch.Kind != "text_changed" || ch.Before == nil || ch.After == nil ||
					ch.Before.Text != "News today" || ch.After.Text != "News tonight" || ch.DY != 0 {
					t.Errorf("heading's segment %d (%s): %+v", c.Segment, c.Status, changes)
				}
			}
		}
		if c.Segment > 2 && (c.Status != "passed" || c.ShiftedPx != 80) {
			t.Errorf("segment %d below the change: %s %d px, %q", c.Segment, c.Status, c.ShiftedPx, c.Message)
		}
	}
	if newsSeg != 2 || promoSeg != 1 {
		t.Fatalf("heading's change in segment %d, promo's in %d; want 2 and 1: %s", newsSeg, promoSeg, statuses(r2))
	}

	rules := map[string]string{}
	for _, rule := range []map[string]any{
		{"kind": "ignore_element", "selector": "#promo"},
		{"kind": "dynamic_text", "selector": "#time .clock", "pattern": `\d{1,2}:\d{2}`},
	} {
		var created struct {
			ID string `json:"id"`
		}
		if code := s.do("POST", "/v1/suites/"+suite.ID+"/rules", rule, &created); code != http.StatusCreated {
			t.Fatalf("create rule %v: status %d", rule, code)
		}
		rules[rule["kind"].(string)] = created.ID
	}
	site.set(func(s *shiftSite) { s.news, s.clock = "News today", "11:07" })
	r3 := s.waitRun(s.startRun(suite.ID), time.Minute)
	if r3.Status != "passed" {
		t.Fatalf("with the rules: %s", statuses(r3))
	}
	clock := false
	for _, c := range r3.Comparisons {
		for _, ch := range s.changesOf(c.ID) {
			if ch.Kind == "text_changed" && strings.HasSuffix(ch.Selector, ".clock") {
				clock = ch.SuppressedBy == rules["dynamic_text"] && ch.Before != nil && ch.Before.Text == "10:41" && ch.After.Text == "11:07"
			}
		}
	}
	if !clock {
		t.Fatalf("the clock's change was not found suppressed by the rule: %s", statuses(r3))
	}
	t.Logf("3 runs in %s", time.Since(start).Round(time.Millisecond))
}
