package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// journeyComparison is a comparison with its checkpoint fields.
type journeyComparison struct {
	ID         string    `json:"id"`
	JobID      string    `json:"job_id"`
	Target     string    `json:"target"`
	Checkpoint string    `json:"checkpoint"`
	Step       *int      `json:"step"`
	FailedStep *int      `json:"failed_step"`
	Segment    int       `json:"segment"`
	Status     string    `json:"status"`
	Message    string    `json:"message"`
	DiffPixels int64     `json:"diff_pixels"`
	Approved   bool      `json:"approved"`
	Current    *imageRef `json:"current"`
	Baseline   *imageRef `json:"baseline"`
}

type journeyRun struct {
	ID          string              `json:"id"`
	Status      string              `json:"status"`
	Counts      map[string]int      `json:"counts"`
	Comparisons []journeyComparison `json:"comparisons"`
}

func (s *stack) journeyRun(suiteID string) journeyRun {
	s.t.Helper()
	id := s.waitRun(s.startRun(suiteID), 2*time.Minute).ID
	var r journeyRun
	if code := s.do("GET", "/v1/runs/"+id, nil, &r); code != http.StatusOK {
		s.t.Fatalf("GET run: %d", code)
	}
	return r
}

// checkpoints writes a run's comparisons as "name=status" in their order
// ("final" for the page's final screenshot).
func (r journeyRun) checkpoints() string {
	var out []string
	for _, c := range r.Comparisons {
		name := c.Checkpoint
		if name == "" {
			name = "final"
		}
		out = append(out, name+"="+c.Status)
	}
	return strings.Join(out, " ")
}

func (r journeyRun) describe() string {
	var b strings.Builder
	for _, c := range r.Comparisons {
		fmt.Fprintf(&b, "\n  %q step %v failed_step %v: %s %d px %q", c.Checkpoint, stepOf(c.Step), stepOf(c.FailedStep), c.Status, c.DiffPixels, c.Message)
	}
	return b.String()
}

func stepOf(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestJourneyCheckpoints: a suite target that logs in and walks list →
// detail → edit form is four checkpoints, each compared with its own
// baseline: new ×4, approved, passed ×4; a changed detail page fails that
// checkpoint alone (approved on its own); a list page without its link
// makes the detail and edit checkpoints errors naming the click that failed,
// while the login and list checkpoints are still compared.
func TestJourneyCheckpoints(t *testing.T) {
	t.Parallel()
	password := randomPassword()
	app, site := loginApp(t, password, time.Hour)
	s := sharedStack(t)

	const clickDetail = 7
	actions := []map[string]any{
		{"type": "screenshot", "name": "login"}, // 0
		{"type": "type", "selector": "#username", "text": "alice"},
		{"type": "type", "selector": "#password", "text": password},
		{"type": "click", "selector": "#submit"},
		{"type": "wait_for_navigation"},
		{"type": "wait_for_selector", "selector": "h1"},
		{"type": "screenshot", "name": "list"},                                 // 6
		{"type": "click", "selector": "#detail-link", "timeout_ms": 1500},      // 7
		{"type": "wait_for_navigation"},                                        // 8
		{"type": "screenshot", "name": "detail"},                               // 9
		{"type": "click", "selector": "#edit-link"},                            // 10
		{"type": "wait_for_navigation"},                                        // 11: the final screenshot is the edit form
		{"type": "wait_for_selector", "selector": "#edit", "timeout_ms": 3000}, // 12
	}
	var suite struct {
		ID      string `json:"id"`
		Targets []struct {
			FinalScreenshot *bool `json:"final_screenshot"`
		} `json:"targets"`
	}
	var e errResp
	// A target without its final screenshot needs a checkpoint of its own.
	if code := s.do("POST", "/v1/suites", map[string]any{"name": "bad", "targets": []map[string]any{
		{"url": site + "/home", "final_screenshot": false}}}, &e); code != http.StatusBadRequest || e.Error.Field != "targets[0].final_screenshot" {
		t.Fatalf("final_screenshot false without a screenshot action: %d %+v", code, e.Error)
	}
	if code := s.do("POST", "/v1/suites", map[string]any{"name": "orders", "targets": []map[string]any{{
		"url": site + "/login?next=/list", "name": "orders", "viewports": []map[string]any{{"width": 800, "height": 600}},
		"options": map[string]any{"actions": actions, "screenshot": map[string]any{"mode": "viewport"}},
	}}}, &suite); code != http.StatusCreated {
		t.Fatalf("create suite: %d", code)
	}
	order := "login=%s list=%s detail=%s final=%s"

	// 1. New ×4, in the journey's order.
	r1 := s.journeyRun(suite.ID)
	if got, want := r1.checkpoints(), fmt.Sprintf(order, "new", "new", "new", "new"); got != want || r1.Status != "needs_review" {
		t.Fatalf("first run %s: %s, want %s%s", r1.Status, got, want, r1.describe())
	}
	steps := []any{0, 6, 9, nil}
	for i, c := range r1.Comparisons {
		if stepOf(c.Step) != steps[i] || c.Current == nil || c.Current.Width != 800 || c.Current.Height != 600 {
			t.Fatalf("first run checkpoint %d: %+v", i, c)
		}
	}
	if code := s.do("POST", "/v1/runs/"+r1.ID+"/approve", map[string]any{"all": true}, nil); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	var baselines struct {
		Baselines []struct {
			Checkpoint string `json:"checkpoint"`
		} `json:"baselines"`
	}
	if code := s.do("GET", "/v1/suites/"+suite.ID+"/baselines", nil, &baselines); code != http.StatusOK || len(baselines.Baselines) != 4 {
		t.Fatalf("baselines: %d %+v", code, baselines)
	}

	// 2. Unchanged: passed ×4.
	r2 := s.journeyRun(suite.ID)
	if got, want := r2.checkpoints(), fmt.Sprintf(order, "passed", "passed", "passed", "passed"); got != want || r2.Status != "passed" {
		t.Fatalf("unchanged run %s: %s, want %s%s", r2.Status, got, want, r2.describe())
	}

	// 3. The detail page changed: exactly that checkpoint fails; approving it
	// alone approves the run.
	app.SetDetailText("Order #1 — 4 items, total 57.00, gift wrapped")
	r3 := s.journeyRun(suite.ID)
	if got, want := r3.checkpoints(), fmt.Sprintf(order, "passed", "passed", "failed", "passed"); got != want || r3.Status != "failed" {
		t.Fatalf("changed detail run %s: %s, want %s%s", r3.Status, got, want, r3.describe())
	}
	var approved journeyRun
	if code := s.do("POST", "/v1/runs/"+r3.ID+"/approve", map[string]any{"comparisons": []string{r3.Comparisons[2].ID}}, &approved); code != http.StatusOK ||
		approved.Status != "approved" || !approved.Comparisons[2].Approved || approved.Comparisons[1].Approved {
		t.Fatalf("approve the detail checkpoint alone: %d %s %+v", code, approved.Status, approved.Comparisons)
	}

	// 4. The list page lost its link: the click (step 7) fails; login and
	// list still pass, detail and the edit form are errors naming the step.
	app.BreakListLink(true)
	r4 := s.journeyRun(suite.ID)
	if got, want := r4.checkpoints(), fmt.Sprintf(order, "passed", "passed", "error", "error"); got != want || r4.Status != "error" && r4.Status != "failed" {
		t.Fatalf("broken link run %s: %s, want %s%s", r4.Status, got, want, r4.describe())
	}
	for _, c := range r4.Comparisons[2:] {
		if c.FailedStep == nil || *c.FailedStep != clickDetail || !strings.Contains(c.Message, "step 7 (click #detail-link)") {
			t.Fatalf("error checkpoint %q: failed_step %v, message %q; want step %d named", c.Checkpoint, stepOf(c.FailedStep), c.Message, clickDetail)
		}
	}
	var job struct {
		Status string `json:"status"`
		Error  struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if code := s.do("GET", "/v1/jobs/"+r4.Comparisons[0].JobID, nil, &job); code != http.StatusOK || job.Status != "failed" || job.Error.Code != "action_failed" {
		t.Fatalf("the journey's job: %d %+v", code, job)
	}
	t.Logf("runs: %s | %s | %s | %s", r1.checkpoints(), r2.checkpoints(), r3.checkpoints(), r4.checkpoints())
}
