package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/snapq/snapq/jobs"
)

// fakeRepo is an empty store that records CreateBatch calls: it is the
// Server's batches and its jobs.Service's store, and knows no batch, job or
// artifact.
type fakeRepo struct {
	created int
}

var (
	_ jobs.BatchStore = (*fakeRepo)(nil)
	_ BatchReader     = (*fakeRepo)(nil)
)

func (f *fakeRepo) CreateBatch(context.Context, *jobs.Batch, []*jobs.Job) error {
	f.created++
	return nil
}

func (f *fakeRepo) GetBatch(context.Context, string) (*jobs.Batch, error) {
	return nil, jobs.ErrNotFound
}

func (f *fakeRepo) FindIdempotency(context.Context, string, string) (string, string, error) {
	return "", "", jobs.ErrNotFound
}

func (f *fakeRepo) CountUnfinished(context.Context, string) (int, error) { return 0, nil }

func (f *fakeRepo) ListJobs(context.Context, string, jobs.JobStatus, int, string) ([]*jobs.Job, string, error) {
	return nil, "", nil
}

func (f *fakeRepo) CancelBatch(context.Context, string) ([]string, error) {
	return nil, jobs.ErrNotFound
}

func (f *fakeRepo) ListBatches(context.Context, string, string, int, string) ([]*jobs.Batch, string, error) {
	return nil, "", nil
}

func (f *fakeRepo) GetJob(context.Context, string) (*jobs.Job, error) { return nil, jobs.ErrNotFound }

func (f *fakeRepo) ListArtifacts(context.Context, string) ([]*jobs.Artifact, error) { return nil, nil }

func (f *fakeRepo) FirstScreenshots(context.Context, []string) (map[string]*jobs.Artifact, error) {
	return map[string]*jobs.Artifact{}, nil
}

func (f *fakeRepo) GetArtifact(context.Context, string) (*jobs.Artifact, error) {
	return nil, jobs.ErrNotFound
}

type fakeQueue struct{ enqueued int }

func (q *fakeQueue) Enqueue(context.Context, string, time.Duration) error      { q.enqueued++; return nil }
func (q *fakeQueue) TaskState(context.Context, string) (string, string, error) { return "", "", nil }
func (q *fakeQueue) Delete(context.Context, string) error                      { return nil }

func setup(t *testing.T) (http.Handler, *fakeRepo, *fakeQueue) {
	t.Helper()
	repo, q := &fakeRepo{}, &fakeQueue{}
	s := &Server{Service: &jobs.Service{Repo: repo, Queue: q}, Batches: repo, Config: Config{MaxBodyBytes: 1024, AllowedHosts: testHosts}}
	return s.Handler(), repo, q
}

// testHosts lets httptest's Host (example.com) pass the Host check that
// runs with auth off.
var testHosts = []string{"example.com"}

type errBody struct {
	Error apiError `json:"error"`
}

func send(t *testing.T, h http.Handler, method, path, contentType, body string) (int, errBody, http.Header) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var e errBody
	_ = json.Unmarshal(rec.Body.Bytes(), &e)
	return rec.Code, e, rec.Header()
}

func TestCreateBatchErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		contentType string
		body        string
		wantStatus  int
		wantCode    string
		wantField   string
	}{
		{name: "bad url", contentType: "application/json", body: `{"urls": ["ftp://x.example/"]}`,
			wantStatus: 400, wantCode: "invalid_url", wantField: "urls[0]"},
		{name: "not json", contentType: "application/json", body: `{`, wantStatus: 400, wantCode: "invalid_json"},
		{name: "trailing bytes", contentType: "application/json", body: `{"urls": ["https://a.example/"]}x`,
			wantStatus: 400, wantCode: "invalid_json"},
		{name: "over the body limit", contentType: "application/json",
			body: `{"urls": ["https://a.example/"]}` + strings.Repeat(" ", 1024), wantStatus: 413, wantCode: "body_too_large"},
		{name: "form body", contentType: "application/x-www-form-urlencoded", body: `urls=x`,
			wantStatus: 415, wantCode: "unsupported_media_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, repo, q := setup(t)
			code, e, _ := send(t, h, "POST", "/v1/batches", tt.contentType, tt.body)
			if code != tt.wantStatus || e.Error.Code != tt.wantCode || e.Error.Field != tt.wantField || e.Error.Message == "" {
				t.Errorf("got %d %+v, want %d code %q field %q", code, e.Error, tt.wantStatus, tt.wantCode, tt.wantField)
			}
			if repo.created != 0 || q.enqueued != 0 {
				t.Errorf("a rejected request stored %d batches and enqueued %d tasks", repo.created, q.enqueued)
			}
		})
	}
}

func TestCreateBatchAccepted(t *testing.T) {
	t.Parallel()
	h, repo, q := setup(t)
	req := httptest.NewRequest("POST", "/v1/batches", strings.NewReader(`{"urls": ["https://a.example/", "https://b.example/x"]}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var out struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Total  int    `json:"total"`
		Jobs   []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 202 || out.Status != "queued" || out.Total != 2 || len(out.Jobs) != 2 || out.Jobs[1].Name != "b.example-x" {
		t.Fatalf("got %d %s", rec.Code, rec.Body)
	}
	if loc := rec.Header().Get("Location"); loc != "/v1/batches/"+out.ID {
		t.Errorf("Location = %q", loc)
	}
	if repo.created != 1 || q.enqueued != 2 {
		t.Errorf("stored %d batches, enqueued %d tasks; want 1 and 2", repo.created, q.enqueued)
	}
}

func TestNotFoundAndMethod(t *testing.T) {
	t.Parallel()
	h, _, _ := setup(t)
	tests := []struct {
		method, path string
		want         int
		code         string
	}{
		{"GET", "/v1/jobs/not-a-uuid", 404, "not_found"},
		{"GET", "/v1/jobs/0190a0a0-0000-7000-8000-0000000000ff", 404, "not_found"},
		{"GET", "/v1/nothing", 404, "not_found"},
		{"DELETE", "/v1/batches", 405, "method_not_allowed"},
		{"GET", "/v1/batches?limit=0", 400, "invalid_query"},
	}
	for _, tt := range tests {
		code, e, _ := send(t, h, tt.method, tt.path, "", "")
		if code != tt.want || e.Error.Code != tt.code {
			t.Errorf("%s %s = %d %+v, want %d %s", tt.method, tt.path, code, e.Error, tt.want, tt.code)
		}
	}
}

// Request checks answer before the :id loader looks the resource up, so a
// request for a missing resource that is also malformed gets the 4xx of its
// form, as it did before the loaders.
func TestChecksBeforeLoad(t *testing.T) {
	t.Parallel()
	h, _, _ := setup(t)
	const missing = "/0190a0a0-0000-7000-8000-0000000000ff"
	tests := []struct {
		name, method, path, contentType, body string
		want                                  int
		code                                  string
	}{
		{name: "jobs of a missing batch", method: "GET", path: "/v1/batches" + missing + "/jobs", want: 404, code: "not_found"},
		{name: "bad status of a missing batch", method: "GET", path: "/v1/batches" + missing + "/jobs?status=done",
			want: 400, code: "invalid_query"},
		{name: "bad id before bad status", method: "GET", path: "/v1/batches/nope/jobs?status=done", want: 404, code: "not_found"},
		{name: "bad limit of a missing suite", method: "GET", path: "/v1/suites" + missing + "/runs?limit=0",
			want: 400, code: "invalid_query"},
		{name: "form approval of a missing run", method: "POST", path: "/v1/runs" + missing + "/approve",
			contentType: "application/x-www-form-urlencoded", body: "all=true", want: 415, code: "unsupported_media_type"},
		{name: "bad approval of a missing run", method: "POST", path: "/v1/runs" + missing + "/approve",
			contentType: "application/json", body: `{"all": true, "targets": ["a"]}`, want: 400, code: "invalid_approval"},
		{name: "approval of passed ones", method: "POST", path: "/v1/runs" + missing + "/approve",
			contentType: "application/json", body: `{"status": ["new", "passed"]}`, want: 400, code: "invalid_option"},
		{name: "status and all", method: "POST", path: "/v1/runs" + missing + "/approve",
			contentType: "application/json", body: `{"all": true, "status": ["new"]}`, want: 400, code: "invalid_approval"},
		{name: "bad status of a missing run's comparisons", method: "GET", path: "/v1/runs" + missing + "/comparisons?status=failed,done",
			want: 400, code: "invalid_query"},
		{name: "bad approved filter", method: "GET", path: "/v1/runs" + missing + "/comparisons?approved=yes",
			want: 400, code: "invalid_query"},
		{name: "bad cursor of comparisons", method: "GET", path: "/v1/runs" + missing + "/comparisons?cursor=x",
			want: 400, code: "invalid_query"},
		{name: "reject without ids", method: "POST", path: "/v1/runs" + missing + "/reject",
			contentType: "application/json", body: `{"comparisons": []}`, want: 400, code: "invalid_option"},
		{name: "reject a bad id", method: "POST", path: "/v1/runs" + missing + "/reject",
			contentType: "application/json", body: `{"comparisons": ["x"]}`, want: 400, code: "invalid_id"},
		{name: "form patch of a missing suite", method: "PATCH", path: "/v1/suites" + missing,
			contentType: "text/plain", body: "x", want: 415, code: "unsupported_media_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, e, _ := send(t, h, tt.method, tt.path, tt.contentType, tt.body)
			if code != tt.want || e.Error.Code != tt.code {
				t.Errorf("%s %s = %d %+v, want %d %s", tt.method, tt.path, code, e.Error, tt.want, tt.code)
			}
		})
	}
}
