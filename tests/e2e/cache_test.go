package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snapq/snapq/internal/testenv"
)

// cachedJob is GET /v1/jobs/:id as the result cache test reads it.
type cachedJob struct {
	ID     string `json:"id"`
	URL    string `json:"url"`
	Status string `json:"status"`
	Result *struct {
		CachedFrom string `json:"cached_from"`
		Title      string `json:"title"`
	} `json:"result"`
	Artifacts []struct {
		Name   string `json:"name"`
		SHA256 string `json:"sha256"`
	} `json:"artifacts"`
}

// The result cache: a second identical batch within max_age_s renders
// nothing (the worker's renders and cache-hit counters) and its jobs name
// the same objects; a different option, another API key or a capture older
// than max_age_s renders again. Content addressing is off, so a render
// would write keys of its own: equal keys can only come from the cache.
func TestResultCache(t *testing.T) {
	t.Parallel()
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s := startStack(t, "SNAPQ_AUTH=on", "SNAPQ_CONTENT_ADDRESSED=false", "SNAPQ_METRICS_ADDR=127.0.0.1:"+port)
	workerMetrics := "http://127.0.0.1:" + port + "/metrics"
	keyA, keyB := s.apiKey("alice"), s.apiKey("bob")
	auth := func(k string) map[string]string { return map[string]string{"Authorization": "Bearer " + k} }
	site := fixtureSite(t)
	targets := []map[string]any{{"url": site + "/short", "name": "short"}, {"url": site + "/tall?h=1500", "name": "tall"}}
	counters := func() (renders, hits int) {
		m := scrapeMetrics(t, workerMetrics)
		for l := range strings.Lines(m) {
			fmt.Sscanf(l, "snapq_worker_renders_total %d", &renders)
			fmt.Sscanf(l, "snapq_result_cache_hits_total %d", &hits)
		}
		return renders, hits
	}
	run := func(key string, options map[string]any) map[string]cachedJob {
		t.Helper()
		var b batchResp
		if code, _ := s.doWith("POST", "/v1/batches", auth(key), map[string]any{"targets": targets, "options": options}, &b); code != http.StatusAccepted {
			t.Fatalf("submit: %d", code)
		}
		if done := s.waitAuthBatch(b.ID, auth(key), 2*time.Minute); done.Counts["succeeded"] != len(targets) {
			t.Fatalf("batch %s: %v, want all succeeded", b.ID, done.Counts)
		}
		out := map[string]cachedJob{}
		for _, j := range b.Jobs {
			var cj cachedJob
			if code, _ := s.doWith("GET", "/v1/jobs/"+j.ID, auth(key), nil, &cj); code != http.StatusOK {
				t.Fatalf("GET job: %d", code)
			}
			out[cj.URL] = cj
		}
		return out
	}
	keysOf := func() map[string][]string {
		_, arts := s.rows()
		m := map[string][]string{}
		for _, a := range arts {
			m[a.JobID] = append(m[a.JobID], a.Name+" "+a.Key+" "+a.SHA256)
		}
		return m
	}
	want := func(step string, renders, hits int) {
		t.Helper()
		r, h := counters()
		t.Logf("%s: worker renders %d, cache hits %d", step, r, h)
		if r != renders || h != hits {
			t.Errorf("%s: worker renders %d, cache hits %d; want %d, %d", step, r, h, renders, hits)
		}
	}

	// Validation names the field and its limits.
	for _, bad := range []any{-1, 1.5, 2592001} {
		var e errResp
		code, _ := s.doWith("POST", "/v1/batches", auth(keyA), map[string]any{"targets": []map[string]any{
			{"url": site + "/short", "options": map[string]any{"max_age_s": bad}}}}, &e)
		if code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(e.Error), "targets[0].options.max_age_s") {
			t.Errorf("max_age_s %v: %d %+v, want 400 naming targets[0].options.max_age_s", bad, code, e.Error)
		}
	}

	hour := map[string]any{"max_age_s": 3600}
	first := run(keyA, hour) // nothing to reuse yet
	want("first batch", 2, 0)
	objects1, bytes1 := s.bucketUsage("")

	second := run(keyA, hour)
	want("identical batch within max_age_s", 2, 2)
	objects2, bytes2 := s.bucketUsage("")
	t.Logf("bucket: %d objects, %d bytes after the first batch; %d, %d after the cached one", objects1, bytes1, objects2, bytes2)
	if objects2 != objects1 || bytes2 != bytes1 {
		t.Errorf("the cached batch changed the bucket from %d objects, %d bytes to %d, %d", objects1, bytes1, objects2, bytes2)
	}
	rows := keysOf()
	for url, j := range second {
		src := first[url]
		if j.Result == nil || j.Result.CachedFrom != src.ID || j.Result.Title != src.Result.Title {
			t.Errorf("%s: result %+v, want cached_from %s with the source's title", url, j.Result, src.ID)
		}
		a, b := rows[src.ID], rows[j.ID]
		slices.Sort(a)
		slices.Sort(b)
		if len(a) == 0 || !slices.Equal(a, b) {
			t.Errorf("%s: artifacts (name key sha256)\n  source %v\n  cached %v\nwant the same objects", url, a, b)
		}
		if len(j.Artifacts) != len(src.Artifacts) {
			t.Errorf("%s: %d artifacts in the API, source has %d", url, len(j.Artifacts), len(src.Artifacts))
		}
	}
	if second[site+"/short"].Result != nil && first[site+"/short"].Result.CachedFrom != "" {
		t.Error("the first batch's job says cached_from")
	}

	other := run(keyA, map[string]any{"max_age_s": 3600, "viewport": map[string]any{"width": 1000}})
	want("a different option", 4, 2)
	for url, j := range other {
		if j.Result == nil || j.Result.CachedFrom != "" {
			t.Errorf("%s with another viewport: cached_from %+v, want a render", url, j.Result)
		}
	}

	bob := run(keyB, hour)
	want("another API key", 6, 2)
	for url, j := range bob {
		if j.Result == nil || j.Result.CachedFrom != "" {
			t.Errorf("%s for another key: cached_from %+v, want a render", url, j.Result)
		}
	}

	time.Sleep(2 * time.Second) // the first batch's captures are now older than 1 s
	run(keyA, map[string]any{"max_age_s": 1})
	want("older than max_age_s", 8, 2)
}
