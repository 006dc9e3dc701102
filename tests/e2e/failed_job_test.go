package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A job whose required action fails shows, through the api, how far it got: result.log has the
// steps that ran and the failed one last; the page's 1 MB exception and 10 MB evaluate value
// reach the stored error and result only within the caps.
func TestFailedJobShowsLog(t *testing.T) {
	t.Parallel()
	s := sharedStack(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><html><body><p id="p">hi</p></body></html>`)
	}))
	t.Cleanup(site.Close)

	var b batchResp
	code := s.do("POST", "/v1/batches", map[string]any{"urls": []string{site.URL + "/"},
		"options": map[string]any{"screenshot": map[string]any{"mode": "viewport"}, "actions": []map[string]any{
			{"type": "evaluate", "expression": `"x".repeat(10 << 20)`},
			{"type": "evaluate", "expression": `throw new Error("ü".repeat(1 << 19))`},
		}}}, &b)
	if code != http.StatusAccepted || len(b.Jobs) != 1 {
		t.Fatalf("submit: status %d, %+v", code, b)
	}
	if done := s.waitBatch(b.ID, 2*time.Minute); done.Counts["failed"] != 1 {
		t.Fatalf("counts %v, want 1 failed", done.Counts)
	}
	var job struct {
		Status string `json:"status"`
		Error  struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		Result *struct {
			HTTPStatus int    `json:"http_status"`
			FinalURL   string `json:"final_url"`
			Log        []struct {
				Type  string `json:"type"`
				OK    bool   `json:"ok"`
				Error string `json:"error"`
			} `json:"log"`
			Evaluations []struct {
				Value string `json:"value"`
			} `json:"evaluations"`
		} `json:"result"`
	}
	if code := s.do("GET", "/v1/jobs/"+b.Jobs[0].ID, nil, &job); code != http.StatusOK {
		t.Fatalf("GET job: %d", code)
	}
	if job.Status != "failed" || job.Error.Code != "action_failed" || len(job.Error.Message) > 1024 {
		t.Errorf("job: status %s, error %s with a %d-byte message; want failed, action_failed, at most 1024 bytes",
			job.Status, job.Error.Code, len(job.Error.Message))
	}
	r := job.Result
	if r == nil {
		t.Fatal("failed job has no result")
	}
	if len(r.Log) != 2 || !r.Log[0].OK || r.Log[1].OK || r.Log[1].Type != "evaluate" || len([]rune(r.Log[1].Error)) > 512 {
		t.Errorf("log = %+v, want evaluate ok, then evaluate failed with a capped error", r.Log)
	}
	if r.HTTPStatus != 200 || r.FinalURL != site.URL+"/" {
		t.Errorf("result: status %d final_url %q, want 200 %q", r.HTTPStatus, r.FinalURL, site.URL+"/")
	}
	if len(r.Evaluations) != 1 || len(r.Evaluations[0].Value) > 64<<10 {
		t.Errorf("evaluations: %d, want the 10 MB value cut to 64 KiB", len(r.Evaluations))
	}
}
