package vcs_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/vcs"
)

// A check run is created with GitHub's documented fields, then completed by
// a PATCH of its id; a completed check carries conclusion and completed_at.
func TestCheckRuns(t *testing.T) {
	type req struct {
		Method, Path string
		Body         map[string]any
	}
	var got []req
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		got = append(got, req{r.Method, r.URL.Path, body})
		if r.Header.Get("Authorization") != "Bearer ghs_x" || r.Header.Get("Accept") != "application/vnd.github+json" {
			t.Errorf("headers %v", r.Header)
		}
		w.WriteHeader(map[string]int{"POST": http.StatusCreated, "PATCH": http.StatusOK}[r.Method])
		io.WriteString(w, `{"id": 4}`)
	}))
	defer srv.Close()
	c := &vcs.Client{Config: vcs.Config{Provider: vcs.GitHub, APIURL: srv.URL, Repo: "acme/site", Token: "ghs_x"}}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	id, err := c.CreateCheckRun(context.Background(), vcs.Check{SHA: "abc1234", Status: vcs.CheckInProgress, Title: "comparing 3 captures",
		Summary: "s", DetailsURL: "http://snapq/#/runs/r", ExternalID: "r", At: at})
	if err != nil || id != "4" {
		t.Fatalf("create: %q, %v", id, err)
	}
	err = c.UpdateCheckRun(context.Background(), id, vcs.Check{SHA: "abc1234", Status: vcs.CheckCompleted,
		Conclusion: vcs.ConclusionFailure, Title: "1 changed, 0 new, 2 passed", Summary: "s2", ExternalID: "r", At: at.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	want := []req{
		{"POST", "/repos/acme/site/check-runs", map[string]any{"name": "snapq", "head_sha": "abc1234", "status": "in_progress",
			"started_at": "2026-12-01T10:00:00Z", "details_url": "http://snapq/#/runs/r", "external_id": "r",
			"output": map[string]any{"title": "comparing 3 captures", "summary": "s"}}},
		{"PATCH", "/repos/acme/site/check-runs/4", map[string]any{"name": "snapq", "status": "completed", "conclusion": "failure",
			"completed_at": "2026-12-01T10:01:00Z", "external_id": "r",
			"output": map[string]any{"title": "1 changed, 0 new, 2 passed", "summary": "s2"}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("requests (-want +got):\n%s", diff)
	}
	gl := &vcs.Client{Config: vcs.Config{Provider: vcs.GitLab, APIURL: srv.URL, Repo: "1", Token: "x"}}
	if _, err := gl.CreateCheckRun(context.Background(), vcs.Check{}); err == nil {
		t.Fatal("a GitLab check run was sent")
	}
}
