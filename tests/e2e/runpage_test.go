package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-rod/rod/lib/input"
	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/jobs"
)

// seedRun writes a finished run of n comparisons of the suite straight into
// the stack's database: a copy of run src (a real, compared run) whose
// comparisons all show src's first comparison's images (real objects, with
// their thumbnails), for targets page-0000… × two viewports. status(i) is
// comparison i's status; new ones have no baseline, missing ones no capture.
// group(i), when group is not nil, is comparison i's change group key.
func (s *stack) seedRun(src string, n int, status func(i int) string, group func(i int) string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.env("SNAPQ_DATABASE_URL"))
	if err != nil {
		s.t.Fatal(err)
	}
	defer conn.Close(ctx)
	var jobID, base, cur, diff string
	if err := conn.QueryRow(ctx, `SELECT job_id::text, baseline_artifact_id::text, current_artifact_id::text, diff_artifact_id::text
		FROM comparisons WHERE run_id = $1 AND diff_artifact_id IS NOT NULL LIMIT 1`, src).Scan(&jobID, &base, &cur, &diff); err != nil {
		s.t.Fatalf("source comparison: %v", err)
	}
	runID, batchID := jobs.NewID(), jobs.NewID()
	if _, err := conn.Exec(ctx, `INSERT INTO batches (id, labels, options, total, created_at, finished_at, job_options)
		SELECT $2, labels, options, 0, now(), now(), job_options FROM batches WHERE id = (SELECT batch_id FROM runs WHERE id = $1)`,
		src, batchID); err != nil {
		s.t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO runs (id, suite_id, batch_id, trigger, status, spec, created_at, finished_at, notify_planned_at)
		SELECT $2, suite_id, $3, 'manual', 'failed', spec, now(), now(), now() FROM runs WHERE id = $1`, src, runID, batchID); err != nil {
		s.t.Fatal(err)
	}
	rows := make([][]any, n)
	for i := range n {
		st := status(i)
		b, c, d := any(base), any(cur), any(diff)
		switch st {
		case "new":
			b, d = nil, nil
		case "missing":
			c, d = nil, nil
		case "passed":
			d = nil
		}
		key := ""
		if group != nil {
			key = group(i)
		}
		rows[i] = []any{jobs.NewID(), runID, jobID, fmt.Sprintf("page-%04d", i/2), []string{"1280x720", "390x844"}[i%2], 1, st,
			int64(1234), 0.0123, 0.001, b, c, d, key}
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"comparisons"}, []string{"id", "run_id", "job_id", "target", "viewport",
		"segment", "status", "diff_pixels", "diff_ratio", "threshold", "baseline_artifact_id", "current_artifact_id",
		"diff_artifact_id", "group_key"}, pgx.CopyFromRows(rows)); err != nil {
		s.t.Fatalf("seed comparisons: %v", err)
	}
	return runID
}

// The run page with 2,000 comparisons: the first page of 50 rows comes up
// with the counts users filter by; keyboard review approves the selected
// comparison and pages; a filter pages its own rows and approves them all;
// "Approve all" approves the rest in one request. Time to interactive (from
// navigation until the first page is drawn and the keys work) and the
// approval of 2,000 comparisons in one request are measured and logged.
func TestDashboardRunPageAtScale(t *testing.T) {
	t.Parallel()
	s := sharedStack(t)
	site := &changingSite{color: "#223344", blocks: 1}
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	var suite struct {
		ID string `json:"id"`
	}
	if code := s.do("POST", "/v1/suites", map[string]any{"name": "big site",
		"targets": []map[string]any{{"url": srv.URL + "/page", "name": "home"}}}, &suite); code != http.StatusCreated {
		t.Fatalf("create suite: status %d", code)
	}
	first := s.waitRun(s.startRun(suite.ID), 2*time.Minute)
	if code := s.do("POST", "/v1/runs/"+first.ID+"/approve", map[string]any{"all": true}, nil); code != http.StatusOK {
		t.Fatalf("approve the first run: status %d", code)
	}
	site.set("#cc2200", 1)
	src := s.waitRun(s.startRun(suite.ID), 2*time.Minute)
	if src.Status != "failed" {
		t.Fatalf("second run: %s: %s", src.Status, statuses(src))
	}
	// 1,200 failed, 400 new, 200 missing, 200 passed.
	mix := func(i int) string {
		return [...]string{"failed", "failed", "failed", "failed", "failed", "failed", "new", "new", "missing", "passed"}[i%10]
	}
	big := s.seedRun(src.ID, 2000, mix, nil)

	// Time to interactive: a fresh navigation to the run page until its
	// first page is drawn with the keys bound (the page notes that moment).
	ui := openDashboard(t, "about:blank")
	start := time.Now()
	if err := ui.page.Navigate(s.api + "/#/runs/" + big); err != nil {
		t.Fatal(err)
	}
	ui.wait("the first page of comparisons", 30*time.Second, `() => !!document.querySelector('#run-list[data-ready-ms]')`)
	wall := time.Since(start)
	readyMs := ui.eval(`() => Number(document.querySelector('#run-list').dataset.readyMs)`).Int()
	rows := `[...document.querySelectorAll('#run-list article[data-comparison]')]`
	if n := ui.eval(`() => ` + rows + `.length`).Int(); n != 50 {
		ui.fatalf("%d rows on the first page, want 50", n)
	}
	if got := ui.text("#run-page"); got != "1–50 of 2000" {
		ui.fatalf("pager %q", got)
	}
	if got := ui.eval(`() => [...document.querySelectorAll('nav.filters a')].map(a => a.textContent).join(', ')`).Str(); got !=
		"all (2000), to review (1800), failed (1200), new (400), missing (200), passed (200), error (0)" {
		ui.fatalf("filters %q", got)
	}
	if got := ui.text("#approve-all"); got != "Approve all (1800)" {
		ui.fatalf("approve all button %q", got)
	}
	if !ui.eval(`() => !!document.getElementById('run-groups')`).Bool() {
		ui.fatalf("no #run-groups container")
	}
	// Rows show thumbnails, lazily; only the selected one its full images.
	if got := ui.eval(`() => [...document.querySelectorAll('.cmp-thumbs img')].filter(i => i.loading === 'lazy' && i.src.endsWith('/thumbnail')).length`).Int(); got < 49 {
		ui.fatalf("%d lazy thumbnails in the compact rows", got)
	}
	selected := `() => { const el = document.querySelector('#run-list article[aria-current=true]'); return el ? el.dataset.comparison : ''; }`
	ids := func() []string {
		return strings.Split(ui.eval(`() => `+rows+`.map(a => a.dataset.comparison).join(',')`).Str(), ",")
	}
	press := func(keys ...input.Key) {
		t.Helper()
		for _, k := range keys {
			if err := ui.page.Keyboard.Type(k); err != nil {
				ui.fatalf("press %v: %v", k, err)
			}
		}
	}
	page1 := ids()
	if got := ui.eval(selected).Str(); got != page1[0] {
		ui.fatalf("selected %q at first, want the first row", got)
	}
	press('j')
	ui.wait("j selects the second row", 5*time.Second, `() => (`+selected+`)() === '`+page1[1]+`'`)
	if focused := ui.eval(`() => document.activeElement && document.activeElement.dataset.comparison || ''`).Str(); focused != page1[1] {
		ui.fatalf("focus on %q, want the selected row", focused)
	}
	t.Logf("run page with 2,000 comparisons: time to interactive %d ms after navigation started (%s until the test saw it)", readyMs, wall.Round(time.Millisecond))

	// ? shows the keys; Escape closes.
	press('?')
	ui.wait("the help", 5*time.Second, `() => document.querySelector('#run-help').open`)
	press(input.Escape)
	ui.wait("the help closed", 5*time.Second, `() => !document.querySelector('#run-help').open`)

	// a approves the selected (second) row and moves on; k k a approves the first.
	press('a')
	ui.wait("the second row approved", 10*time.Second, `() => document.querySelector('#approve-all').textContent === 'Approve all (1799)'`)
	ui.wait("the selection moved on", 5*time.Second, `() => (`+selected+`)() === '`+page1[2]+`'`)
	press(input.ArrowUp, 'k', 'a')
	ui.wait("the first row approved", 10*time.Second, `() => document.querySelector('#approve-all').textContent === 'Approve all (1798)'`)
	if n := ui.eval(`() => document.querySelectorAll('#run-list article[data-comparison] [data-status=approved]').length`).Int(); n != 2 {
		ui.fatalf("%d rows show approved, want 2", n)
	}
	var approved struct {
		Comparisons []struct {
			ID string `json:"id"`
		} `json:"comparisons"`
		NextCursor *string `json:"next_cursor"`
	}
	if code := s.do("GET", "/v1/runs/"+big+"/comparisons?approved=true", nil, &approved); code != http.StatusOK ||
		len(approved.Comparisons) != 2 || approved.Comparisons[0].ID != page1[0] || approved.Comparisons[1].ID != page1[1] {
		t.Fatalf("approved comparisons: %d %+v, want the first two rows", code, approved)
	}

	// n turns the page; k on its first row goes back to the last of page 1.
	press('n')
	ui.wait("page 2", 10*time.Second, `() => document.querySelector('#run-page').textContent === '51–100 of 2000'`)
	page2 := ids()
	if page2[0] == page1[0] || len(page2) != 50 {
		ui.fatalf("page 2 rows %d, first %s", len(page2), page2[0])
	}
	press('k')
	ui.wait("back on page 1's last row", 10*time.Second, `() => document.querySelector('#run-page').textContent === '1–50 of 2000' && (`+selected+`)() === '`+page1[49]+`'`)
	ui.shot("dashboard-run-2000")

	// The "new" filter: its own count and pages, all rows new; approving it
	// approves the 400.
	ui.click(`nav.filters a[data-filter=new]`)
	ui.wait("the new filter", 15*time.Second, `() => document.querySelector('#run-page') && document.querySelector('#run-page').textContent === '1–50 of 400'`)
	ui.click("#page-next")
	ui.wait("the new filter's page 2", 10*time.Second, `() => document.querySelector('#run-page').textContent === '51–100 of 400'`)
	if got := ui.eval(`() => [...document.querySelectorAll('#run-list article[data-comparison] > .spread .badge:not([data-status=approved])')].map(b => b.dataset.status).filter(s => s !== 'new').length`).Int(); got != 0 {
		ui.fatalf("%d rows of the new filter are not new", got)
	}
	// r rejects the selected row (the page's first): it stays new, shows
	// rejected, and the API says who rejected it.
	newPage2 := ids()
	press('r')
	ui.wait("the first row rejected", 10*time.Second, `() => document.querySelectorAll('#run-list article[data-comparison] [data-status=rejected]').length === 1`)
	var rejected struct {
		Comparisons []struct {
			ID         string  `json:"id"`
			Status     string  `json:"status"`
			Rejected   bool    `json:"rejected"`
			RejectedBy *string `json:"rejected_by"`
		} `json:"comparisons"`
	}
	if code := s.do("GET", "/v1/runs/"+big+"/comparisons?status=new&limit=100", nil, &rejected); code != http.StatusOK || len(rejected.Comparisons) != 100 {
		t.Fatalf("new comparisons: %d, %d", code, len(rejected.Comparisons))
	}
	for i, c := range rejected.Comparisons {
		if want := c.ID == newPage2[0]; c.Rejected != want || c.Status != "new" || (want && (c.RejectedBy == nil || *c.RejectedBy == "")) {
			t.Fatalf("comparison %d (%s): rejected %v by %v status %s; want rejected only %s", i, c.ID, c.Rejected, c.RejectedBy, c.Status, newPage2[0])
		}
	}
	ui.click("#approve-filter")
	ui.wait("the new ones approved", 20*time.Second, `() => document.querySelector('#approve-all').textContent === 'Approve all (1398)'`)

	// Approve all: the rest (1,398) in one request.
	t0 := time.Now()
	// A script click: under load a pointer click could land while the page
	// redraws after the filter's approval (CI saw no request come).
	ui.wait("approve all enabled", 10*time.Second, `() => !document.querySelector('#approve-all').disabled`)
	ui.eval(`() => document.querySelector('#approve-all').click()`)
	ui.wait("the run approved", 30*time.Second, `() => document.querySelector('#run-status').textContent === 'approved' && document.querySelector('#approve-all').disabled`)
	t.Logf("dashboard: approve all (1,398 comparisons) until the page showed the run approved: %s", time.Since(t0).Round(time.Millisecond))
	if got := ui.text(`nav.filters a[data-filter=review]`); got != "to review (0)" {
		ui.fatalf("to review after approve all: %q", got)
	}
	ui.shot("dashboard-run-2000-approved")
	var bl struct {
		Baselines []struct{} `json:"baselines"`
	}
	// home plus the 1,200 failed and 400 new captures; the 200 missing are removed segments.
	if code := s.do("GET", "/v1/suites/"+suite.ID+"/baselines", nil, &bl); code != http.StatusOK || len(bl.Baselines) != 1601 {
		t.Fatalf("active baselines after approving the run: %d %d, want 1601", code, len(bl.Baselines))
	}

	// Approving 2,000 comparisons is one request (one transaction); GET
	// /v1/runs/:id still embeds them all.
	all := s.seedRun(src.ID, 2000, func(int) string { return "failed" }, nil)
	t0 = time.Now()
	var full runResp
	if code := s.do("GET", "/v1/runs/"+all, nil, &full); code != http.StatusOK || len(full.Comparisons) != 2000 {
		t.Fatalf("GET run: %d, %d comparisons", code, len(full.Comparisons))
	}
	getFull := time.Since(t0)
	t0 = time.Now()
	if code := s.do("GET", "/v1/runs/"+all+"/comparisons?limit=50&status=failed", nil, &approved); code != http.StatusOK || len(approved.Comparisons) != 50 {
		t.Fatalf("a page of comparisons: %d, %d", code, len(approved.Comparisons))
	}
	getPage := time.Since(t0)
	t0 = time.Now()
	var after runResp
	if code := s.do("POST", "/v1/runs/"+all+"/approve?comparisons=false", map[string]any{"all": true}, &after); code != http.StatusOK ||
		after.Status != "approved" || after.Counts["to_review"] != 0 || after.Comparisons != nil {
		t.Fatalf("approve 2,000: %d %s %v", code, after.Status, after.Counts)
	}
	t.Logf("2,000 comparisons: POST approve {all} %s (one request); GET /v1/runs/:id with all embedded %s; one page of 50 %s",
		time.Since(t0).Round(time.Millisecond), getFull.Round(time.Millisecond), getPage.Round(time.Millisecond))

	// Change groups on the run page: 2,000 failed comparisons showing two
	// changes (1,500 and 500 of them); "Approve group" approves the 1,500 in
	// one call and the page follows.
	grouped := s.seedRun(src.ID, 2000, func(int) string { return "failed" }, func(i int) string {
		return map[bool]string{true: "header-change", false: "footer-change"}[i%4 != 3]
	})
	if err := ui.page.Navigate(s.api + "/#/runs/" + grouped); err != nil {
		t.Fatal(err)
	}
	ui.wait("the change groups", 30*time.Second, `() => document.querySelectorAll('#change-groups [data-group]').length === 2`)
	if got := ui.text(`#change-groups [data-group="header-change"] strong`); !strings.Contains(strings.ReplaceAll(got, ",", ""), "1500") {
		ui.fatalf("the largest group says %q, want 1,500 comparisons", got)
	}
	if got := ui.text(`#change-groups [data-group="header-change"] button.btn-primary`); got != "Approve group (1500)" {
		ui.fatalf("the group's approve button says %q", got)
	}
	t0 = time.Now()
	ui.click(`#change-groups [data-group="header-change"] button.btn-primary`)
	ui.wait("the group approved", 30*time.Second, `() => document.querySelector('#approve-all').textContent === 'Approve all (500)'`)
	t.Logf("dashboard: approve a group of 1,500 until the page showed 500 left: %s", time.Since(t0).Round(time.Millisecond))
	var left runResp
	if code := s.do("GET", "/v1/runs/"+grouped+"?comparisons=false", nil, &left); code != http.StatusOK || left.Counts["to_review"] != 500 {
		t.Fatalf("after the group approval: %d %v, want 500 to review", code, left.Counts)
	}
	ui.shot("dashboard-run-groups")
}
