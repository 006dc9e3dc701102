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

// tallSite serves a 25,000 px page of numbered text lines (24 px each)
// starting at y = 500, optionally with a 37 px banner inserted at y = 500
// and one line's words changed.
type tallSite struct {
	mu      sync.Mutex
	banner  bool
	changed int // line whose text changed; 0: none
}

func (s *tallSite) set(banner bool, changed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.banner, s.changed = banner, changed
}

const tallLines = (25000 - 500) / 24

func (s *tallSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	banner, changed := s.banner, s.changed
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><style>
		body { margin: 0; font: 16px/24px sans-serif; }
		header { height: 500px; background: #f0f0f0; }
		.banner { height: 37px; background: #3060c0; color: white; }
		p { margin: 0 0 0 20px; height: 24px; white-space: nowrap; overflow: hidden; }
	</style></head><body><header><h1 style="margin:0;padding:40px">Release notes</h1></header>`)
	if banner {
		b.WriteString(`<div class="banner">Cookie banner</div>`)
	}
	for i := range tallLines {
		text := fmt.Sprintf("Line %d: the quick brown fox %d jumps over %d dogs", i, i*7%13, i*11%17)
		if i == changed && changed > 0 {
			text = fmt.Sprintf("Line %d: the QUICK RED fox %d jumps over %d dogs", i, i*7%13, i*11%17)
		}
		fmt.Fprintf(&b, "<p>%s</p>", text)
	}
	fmt.Fprintf(&b, `<div style="height:%dpx"></div></body></html>`, 25000-500-24*tallLines)
	w.Write([]byte(b.String()))
}

// The proof through the API, with Chromium: a 25,000 px page, a
// 37 px block inserted at y = 500 and a line changed far below. In aligned
// mode (the default for segments) segment 1 fails with one inserted hunk of
// 37 px at y = 500, the changed line's segment fails with a changed hunk,
// and every other segment passes, shifted by 37 px. In pixel mode every
// segment from the first fails.
func TestRegressionAlignedReflow(t *testing.T) {
	t.Parallel()
	s := sharedStack(t)
	site := &tallSite{}
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	var suite struct {
		ID string `json:"id"`
	}
	if code := s.do("POST", "/v1/suites", map[string]any{
		"name": "tall",
		// A narrow viewport keeps three captures of 35 segments quick.
		"targets": []map[string]any{{"url": srv.URL + "/", "name": "tall", "viewports": []map[string]any{{"width": 480, "height": 720}}}},
		"options": map[string]any{"screenshot": map[string]any{"max_segments": 50}},
	}, &suite); code != http.StatusCreated {
		t.Fatalf("create suite: status %d", code)
	}
	r1 := s.waitRun(s.startRun(suite.ID), 3*time.Minute)
	if r1.Counts["new"] != 35 {
		t.Fatalf("first run: %s %v", r1.Status, r1.Counts)
	}
	if code := s.do("POST", "/v1/runs/"+r1.ID+"/approve", map[string]any{"all": true}, nil); code != http.StatusOK {
		t.Fatalf("approve: status %d", code)
	}

	const changedLine = 400 // y = 500 + 24·400 = 10,100 in the baseline, 10,137 now: segment 15
	site.set(true, changedLine)
	r2 := s.waitRun(s.startRun(suite.ID), 3*time.Minute)
	k := byKey(r2)
	first := k["tall#1"]
	if r2.Status != "failed" || first.Status != "failed" || first.DiffMode != "aligned" || len(first.Hunks) != 1 ||
		first.Hunks[0] != (hunk{Kind: "inserted", AStart: 500, AEnd: 500, BStart: 500, BEnd: 537}) ||
		!strings.Contains(first.Message, "+37 px inserted at y=500") || first.Diff == nil {
		t.Fatalf("segment 1: %+v\n%s", first, statuses(r2))
	}
	changedSeg := (500+24*changedLine+37)/720 + 1
	for seg := 2; seg <= 35; seg++ {
		c := k[fmt.Sprintf("tall#%d", seg)]
		if seg == changedSeg {
			if c.Status != "failed" || len(c.Hunks) == 0 || c.Hunks[0].Kind != "changed" || c.ShiftedPx != 37 {
				t.Fatalf("changed line's segment %d: %+v", seg, c)
			}
			continue
		}
		if c.Status != "passed" || c.ShiftedPx != 37 || c.Message != "unchanged, shifted +37 px" || c.Diff != nil {
			t.Fatalf("segment %d: %+v\n%s", seg, c, statuses(r2))
		}
	}
	if last := k["tall#35"]; len(r2.Comparisons) != 35 || last.Current == nil || last.Current.Height != 25037-34*720 {
		t.Fatalf("%d comparisons; last segment %+v, want 35 with the last one 37 px taller", len(r2.Comparisons), last)
	}

	// Pixel mode: the same change fails every segment from the first.
	if code := s.do("PATCH", "/v1/suites/"+suite.ID, map[string]any{"diff": map[string]any{"mode": "pixel"}}, nil); code != http.StatusOK {
		t.Fatalf("patch diff mode: status %d", code)
	}
	r3 := s.waitRun(s.startRun(suite.ID), 3*time.Minute)
	k = byKey(r3)
	for seg := 1; seg <= 35; seg++ {
		if c := k[fmt.Sprintf("tall#%d", seg)]; c.Status != "failed" || c.DiffMode != "pixel" {
			t.Fatalf("pixel mode segment %d: %+v", seg, c)
		}
	}
}
