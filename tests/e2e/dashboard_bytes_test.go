package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/go-rod/rod/lib/proto"
	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/jobs"
)

// seedBatch writes a finished batch of n succeeded jobs straight into the
// stack's database, cloned round-robin from the jobs of batch src (real
// captures): each new job's first screenshot row names its source's object,
// and, with thumbs, its thumbnail row names the source's thumbnail object
// (without: the batch looks as it does with SNAPQ_THUMBNAILS=false). Every
// artifact row has an id of its own, so the browser fetches every one.
func (s *stack) seedBatch(src string, n int, thumbs bool) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.env("SNAPQ_DATABASE_URL"))
	if err != nil {
		s.t.Fatal(err)
	}
	defer conn.Close(ctx)
	type source struct {
		url, name                             string
		result                                []byte
		artName, key, ctype, sha, tKey, tType string
		bytes, tBytes                         int64
		w, h, tW, tH                          int
	}
	rows, err := conn.Query(ctx, `SELECT j.url, j.name, j.result, a.name, a.object_key, a.content_type, a.sha256, a.bytes,
			coalesce(a.width, 0), coalesce(a.height, 0), t.object_key, t.content_type, t.bytes, t.width, t.height
		FROM jobs j JOIN LATERAL (SELECT * FROM artifacts WHERE job_id = j.id AND kind = 'screenshot' ORDER BY seq LIMIT 1) a ON true
		JOIN thumbnails t ON t.artifact_id = a.id
		WHERE j.batch_id = $1 AND j.status = 'succeeded' ORDER BY j.seq`, src)
	if err != nil {
		s.t.Fatal(err)
	}
	var srcs []source
	for rows.Next() {
		var x source
		if err := rows.Scan(&x.url, &x.name, &x.result, &x.artName, &x.key, &x.ctype, &x.sha, &x.bytes, &x.w, &x.h,
			&x.tKey, &x.tType, &x.tBytes, &x.tW, &x.tH); err != nil {
			s.t.Fatal(err)
		}
		srcs = append(srcs, x)
	}
	if err := rows.Err(); err != nil || len(srcs) == 0 {
		s.t.Fatalf("source jobs with thumbnails: %d, %v", len(srcs), err)
	}
	id := jobs.NewID()
	now := time.Now()
	if _, err := conn.Exec(ctx, `INSERT INTO batches (id, labels, options, total, created_at, finished_at, job_options)
		SELECT $2, '{}', options, $3, now(), now(), job_options FROM batches WHERE id = $1`, src, id, n); err != nil {
		s.t.Fatal(err)
	}
	var jobRows, artRows, thumbRows [][]any
	for i := range n {
		x := srcs[i%len(srcs)]
		jobID, artID := jobs.NewID(), jobs.NewID()
		jobRows = append(jobRows, []any{jobID, id, i + 1, x.url, fmt.Sprintf("%s-%04d", x.name, i+1), "succeeded", 1, x.result, now, now, now, now, now})
		artRows = append(artRows, []any{artID, jobID, "screenshot", x.artName, 1, x.key, x.ctype, x.bytes, x.w, x.h, x.sha})
		if thumbs {
			thumbRows = append(thumbRows, []any{artID, x.tKey, x.tType, x.tBytes, x.tW, x.tH})
		}
	}
	for _, c := range []struct {
		table string
		cols  []string
		rows  [][]any
	}{
		{"jobs", []string{"id", "batch_id", "seq", "url", "name", "status", "attempts", "result", "created_at", "updated_at", "started_at", "finished_at", "dispatched_at"}, jobRows},
		{"artifacts", []string{"id", "job_id", "kind", "name", "seq", "object_key", "content_type", "bytes", "width", "height", "sha256"}, artRows},
		{"thumbnails", []string{"artifact_id", "object_key", "content_type", "bytes", "width", "height"}, thumbRows},
	} {
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{c.table}, c.cols, pgx.CopyFromRows(c.rows)); err != nil {
			s.t.Fatalf("seed %s: %v", c.table, err)
		}
	}
	return id
}

// imageBytes counts what the page's image requests transfer (encoded
// bytes on the wire, headers included), from Chromium's network events.
// An image URL that redirects (/v1/artifacts/:id[/thumbnail] answers 302
// to a presigned object URL) pays for the redirect too: its response's
// bytes arrive with the follow-up request and are counted in bytes and,
// on their own, in redirects.
type imageBytes struct {
	mu        sync.Mutex
	images    map[proto.NetworkRequestID]bool
	bytes     int64
	redirects int64
	requests  int
}

func (u *browserUI) countImageBytes() *imageBytes {
	u.t.Helper()
	c := &imageBytes{images: map[proto.NetworkRequestID]bool{}}
	if err := (proto.NetworkEnable{}).Call(u.page); err != nil {
		u.t.Fatal(err)
	}
	// Every artifact of the two batches is another URL, but both name the
	// same objects: no cache, so each batch page pays its own bytes.
	if err := (proto.NetworkSetCacheDisabled{CacheDisabled: true}).Call(u.page); err != nil {
		u.t.Fatal(err)
	}
	go u.page.EachEvent(func(e *proto.NetworkRequestWillBeSent) {
		if e.RedirectResponse != nil && e.Type == proto.NetworkResourceTypeImage {
			c.mu.Lock()
			c.bytes += int64(e.RedirectResponse.EncodedDataLength)
			c.redirects += int64(e.RedirectResponse.EncodedDataLength)
			c.mu.Unlock()
		}
	}, func(e *proto.NetworkResponseReceived) {
		if e.Type == proto.NetworkResourceTypeImage {
			c.mu.Lock()
			c.images[e.RequestID] = true
			c.mu.Unlock()
		}
	}, func(e *proto.NetworkLoadingFinished) {
		c.mu.Lock()
		if c.images[e.RequestID] {
			c.bytes += int64(e.EncodedDataLength)
			c.requests++
		}
		c.mu.Unlock()
	})()
	return c
}

func (c *imageBytes) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.images, c.bytes, c.redirects, c.requests = map[proto.NetworkRequestID]bool{}, 0, 0, 0
}

// read returns the bytes (redirects included), the redirects' share and
// the finished image requests.
func (c *imageBytes) read() (int64, int64, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes, c.redirects, c.requests
}

// The thumbnail proof: the dashboard's page of a 2,000-job batch,
// every job's preview loaded, transfers under 5 % of the image bytes the
// same page transfers with full-size first segments (what it showed before
// thumbnails, and still shows with SNAPQ_THUMBNAILS=false), and a thumbnail
// shows for every job. The batches are seeded in Postgres from 6 real
// captures of pages that look like real sites (realisticSite: full-size
// PNGs of realistic size; 2,000 renders would take this machine many
// minutes). `make test` shows 50-job batches; SNAPQ_PROOF_SCALE=full
// (`make proofs`) 2,000.
func TestDashboardThumbnailBytes(t *testing.T) {
	t.Parallel()
	start := time.Now()
	dashboardJobs := proofScale(t, 50, 2000)
	s := startStack(t)
	site := realisticSite(t)
	var targets []map[string]any
	for i := range 6 {
		targets = append(targets, map[string]any{"url": fmt.Sprintf("%s/news/%d", site, i+1), "name": fmt.Sprintf("news-%d", i+1)})
	}
	var src batchResp
	// The first screen at 1280x720, as every job's first segment is.
	opts := map[string]any{"screenshot": map[string]any{"mode": "viewport"}}
	if code := s.do("POST", "/v1/batches", map[string]any{"targets": targets, "options": opts}, &src); code != http.StatusAccepted {
		t.Fatalf("submit: %d", code)
	}
	if done := s.waitBatch(src.ID, 5*time.Minute); done.Counts["succeeded"] != len(targets) {
		t.Fatalf("source batch: %v", done.Counts)
	}
	t.Logf("source batch of %d real captures done after %s", len(targets), time.Since(start).Round(time.Second))
	s.checkSourceImages(src.ID, len(targets))
	withThumbs := s.seedBatch(src.ID, dashboardJobs, true)
	fullSize := s.seedBatch(src.ID, dashboardJobs, false)
	t.Logf("seeded two batches of %d jobs from %d real captures after %s", dashboardJobs, len(targets), time.Since(start).Round(time.Second))

	ui := openDashboard(t, s.api+"/")
	counter := ui.countImageBytes()
	// show opens a batch's page, loads every job's row ("Load more jobs")
	// and every row's image, and returns the image bytes (redirects
	// included), the redirects' share, the image requests and the rows
	// showing a thumbnail.
	show := func(id string) (int64, int64, int, int) {
		t.Helper()
		began := time.Now()
		counter.reset()
		ui.eval(`(id) => { location.hash = '#/batches/' + id; }`, id)
		ui.wait("the batch page", 30*time.Second, `() => document.querySelectorAll('#job-rows tr').length > 0`)
		for {
			n := ui.eval(`() => document.querySelectorAll('#job-rows tr').length`).Int()
			if n >= dashboardJobs {
				break
			}
			ui.eval(`() => { const b = [...document.querySelectorAll('main button')].find(b => b.textContent === 'Load more jobs'); if (b) b.click(); }`)
			ui.wait("more rows", 30*time.Second, `(n) => document.querySelectorAll('#job-rows tr').length > n`, n)
		}
		// Rows load their image lazily, as they scroll into view: show
		// every row's, as if the whole table had been scrolled through.
		ui.eval(`() => document.querySelectorAll('#job-rows img').forEach(i => { i.loading = 'eager'; })`)
		t.Logf("%d rows shown after %s", dashboardJobs, time.Since(began).Round(100*time.Millisecond))
		for last := time.Now(); ; time.Sleep(time.Second) {
			loaded := ui.eval(`() => [...document.querySelectorAll('#job-rows .thumb-box img')].filter(i => i.complete && i.naturalWidth > 0).length`).Int()
			if loaded == dashboardJobs {
				break
			}
			if time.Since(last) > 10*time.Second {
				b, _, reqs := counter.read()
				t.Logf("%d of %d images loaded after %s (%d image requests finished, %d bytes)", loaded, dashboardJobs, time.Since(began).Round(time.Second), reqs, b)
				last = time.Now()
			}
			if time.Since(began) > 5*time.Minute {
				ui.fatalf("%d of %d images loaded after %s", loaded, dashboardJobs, time.Since(began).Round(time.Second))
			}
		}
		time.Sleep(time.Second) // the last loadingFinished events
		b, redirects, reqs := counter.read()
		thumbs := ui.eval(`() => [...document.querySelectorAll('#job-rows .thumb-box img')].filter(i => i.src.endsWith('/thumbnail') && i.naturalWidth > 0 && i.naturalWidth <= 320).length`).Int()
		t.Logf("batch page %s: %d rows, %d image requests, %d image bytes (%d of them redirects), %d thumbnails, in %s",
			id, dashboardJobs, reqs, b, redirects, thumbs, time.Since(began).Round(100*time.Millisecond))
		return b, redirects, reqs, thumbs
	}
	thumbBytes, thumbRedirects, thumbReqs, thumbs := show(withThumbs)
	// (no ui.shot here: a full-page screenshot of 2,000 rows takes minutes)
	fullBytes, fullRedirects, fullReqs, _ := show(fullSize)
	ratio := float64(thumbBytes) / float64(fullBytes)
	t.Logf("image bytes for %d jobs: thumbnails %d (%d requests, %.0f B/job, redirects %.0f B/job), full-size first segments %d (%d requests, %.0f B/job, redirects %.0f B/job): %.2f %%",
		dashboardJobs, thumbBytes, thumbReqs, float64(thumbBytes)/float64(dashboardJobs), float64(thumbRedirects)/float64(dashboardJobs),
		fullBytes, fullReqs, float64(fullBytes)/float64(dashboardJobs), float64(fullRedirects)/float64(dashboardJobs), 100*ratio)
	if thumbs != dashboardJobs {
		t.Errorf("%d of %d jobs show a thumbnail", thumbs, dashboardJobs)
	}
	if thumbReqs < dashboardJobs || fullReqs < dashboardJobs {
		t.Errorf("image requests: %d with thumbnails, %d full size; want every job's (%d)", thumbReqs, fullReqs, dashboardJobs)
	}
	if thumbRedirects == 0 || fullRedirects == 0 {
		t.Errorf("redirect bytes: %d with thumbnails, %d full size; both routes redirect, so the count missed them", thumbRedirects, fullRedirects)
	}
	if ratio >= 0.05 {
		t.Errorf("the batch page transfers %d image bytes with thumbnails, %.1f %% of the %d full size; want under 5 %%", thumbBytes, 100*ratio, fullBytes)
	}
	t.Logf("TestDashboardThumbnailBytes took %s (%d-job batches)", time.Since(start).Round(time.Second), dashboardJobs)
}

// checkSourceImages logs the source captures' first screens and their
// thumbnails as stored, and fails unless they are what real sites give: a
// 1280x720 PNG of at least 100 KB and a JPEG at most 320 px wide.
func (s *stack) checkSourceImages(batch string, want int) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.env("SNAPQ_DATABASE_URL"))
	if err != nil {
		s.t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT a.name, a.content_type, a.bytes, coalesce(a.width, 0), coalesce(a.height, 0),
			t.content_type, t.bytes, t.width, t.height
		FROM jobs j JOIN LATERAL (SELECT * FROM artifacts WHERE job_id = j.id AND kind = 'screenshot' ORDER BY seq LIMIT 1) a ON true
		JOIN thumbnails t ON t.artifact_id = a.id
		WHERE j.batch_id = $1 ORDER BY j.seq`, batch)
	if err != nil {
		s.t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var name, ctype, tType string
		var size, tSize int64
		var w, h, tW, tH int
		if err := rows.Scan(&name, &ctype, &size, &w, &h, &tType, &tSize, &tW, &tH); err != nil {
			s.t.Fatal(err)
		}
		n++
		s.t.Logf("source %s: %s %dx%d %d bytes; thumbnail %s %dx%d %d bytes (%.1f %%)", name, ctype, w, h, size, tType, tW, tH, tSize, 100*float64(tSize)/float64(size))
		if ctype != "image/png" || w != 1280 || h != 720 || size < 100_000 {
			s.t.Errorf("source %s: %s %dx%d %d bytes; want a 1280x720 PNG of a real-looking page (>= 100 KB)", name, ctype, w, h, size)
		}
		if tType != "image/jpeg" || tW > 320 || tW == 0 {
			s.t.Errorf("thumbnail of %s: %s %dx%d; want a JPEG at most 320 px wide", name, tType, tW, tH)
		}
	}
	if err := rows.Err(); err != nil {
		s.t.Fatal(err)
	}
	if n != want {
		s.t.Fatalf("%d of %d source captures have a first screenshot with a thumbnail", n, want)
	}
}
