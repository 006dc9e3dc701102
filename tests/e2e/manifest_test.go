package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/snapq/snapq/internal/testenv"
)

// manifestJob is the part of GET /v1/jobs/:id this test reads.
type manifestJob struct {
	Result struct {
		Manifest *struct {
			Segments []struct {
				Seq    int    `json:"seq"`
				Name   string `json:"name"`
				Y      int    `json:"y"`
				YCSS   int    `json:"y_css"`
				Width  int    `json:"width"`
				Height int    `json:"height"`
				SHA256 string `json:"sha256"`
				Rows   int    `json:"rows"`
			} `json:"segments"`
		} `json:"manifest"`
	} `json:"result"`
}

// A segments capture's result carries its manifest (each segment's offset,
// size, row count and the sha256 of the bytes the bucket serves), and an
// aligned comparison of a page whose content only moved below an inserted
// banner decodes only the segment holding the banner (for its diff image):
// the worker's snapq_compare_decoded_segments_total says so.
func TestRegressionAlignedManifest(t *testing.T) {
	t.Parallel()
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s := startStack(t, "SNAPQ_METRICS_ADDR=127.0.0.1:"+port)
	decoded := func() int {
		n := -1
		for l := range strings.Lines(scrapeMetrics(t, "http://127.0.0.1:"+port+"/metrics")) {
			fmt.Sscanf(l, "snapq_compare_decoded_segments_total %d", &n)
		}
		return n
	}
	site := &tallSite{}
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	var suite struct {
		ID string `json:"id"`
	}
	if code := s.do("POST", "/v1/suites", map[string]any{
		"name":    "manifest",
		"targets": []map[string]any{{"url": srv.URL + "/", "name": "tall", "viewports": []map[string]any{{"width": 480, "height": 2000}}}},
		"options": map[string]any{"screenshot": map[string]any{"max_segments": 50}},
	}, &suite); code != http.StatusCreated {
		t.Fatalf("create suite: status %d", code)
	}
	r1 := s.waitRun(s.startRun(suite.ID), 3*time.Minute)
	if r1.Counts["new"] != 13 {
		t.Fatalf("first run: %s %v", r1.Status, r1.Counts)
	}

	// The manifest against the bytes the bucket serves.
	var b struct {
		Jobs []jobResp `json:"jobs"`
	}
	if code := s.do("GET", "/v1/batches/"+r1.BatchID+"/jobs", nil, &b); code != http.StatusOK || len(b.Jobs) != 1 {
		t.Fatalf("GET the run's jobs: %d, %d jobs", code, len(b.Jobs))
	}
	var job manifestJob
	if code := s.do("GET", "/v1/jobs/"+b.Jobs[0].ID, nil, &job); code != http.StatusOK || job.Result.Manifest == nil {
		t.Fatalf("GET job: %d, manifest %v", code, job.Result.Manifest)
	}
	segs := job.Result.Manifest.Segments
	if len(segs) != 13 {
		t.Fatalf("manifest of %d segments, want 13", len(segs))
	}
	k := byKey(r1)
	y := 0
	for i, m := range segs {
		cur := k[fmt.Sprintf("tall#%d", i+1)].Current
		if cur == nil {
			t.Fatalf("segment %d has no current image", i+1)
		}
		sum := sha256.Sum256(download(t, cur.URL))
		wantH := min(2000, 25000-y)
		if m.Seq != i+1 || m.Y != y || m.YCSS != y || m.Width != 480 || m.Height != wantH || m.Rows != wantH ||
			m.SHA256 != hex.EncodeToString(sum[:]) || cur.Height != m.Height {
			t.Fatalf("manifest segment %d: %+v; want y %d, 480×%d, the served bytes' sha256 %x", i+1, m, y, wantH, sum)
		}
		y += m.Height
	}
	if y != 25000 {
		t.Fatalf("the manifest's segments cover %d px, want 25,000", y)
	}

	if code := s.do("POST", "/v1/runs/"+r1.ID+"/approve", map[string]any{"all": true}, nil); code != http.StatusOK {
		t.Fatalf("approve: status %d", code)
	}
	before := decoded()
	site.set(true, 0) // a 37 px banner at y = 500; everything below moves
	r2 := s.waitRun(s.startRun(suite.ID), 3*time.Minute)
	k = byKey(r2)
	if first := k["tall#1"]; first.Status != "failed" || len(first.Hunks) != 1 || first.Hunks[0].Kind != "inserted" || first.Diff == nil {
		t.Fatalf("segment 1: %+v\n%s", first, statuses(r2))
	}
	for seg := 2; seg <= 13; seg++ {
		if c := k[fmt.Sprintf("tall#%d", seg)]; c.Status != "passed" || c.ShiftedPx != 37 || c.Message != "unchanged, shifted +37 px" {
			t.Fatalf("segment %d: %+v\n%s", seg, c, statuses(r2))
		}
	}
	// 26 segments in the two pages; only the current segment 1 is decoded.
	if got := decoded() - before; got != 1 {
		t.Fatalf("the comparison decoded %d segments, want 1 (segment 1's diff image)", got)
	}
}
