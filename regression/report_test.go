package regression

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/snapq/snapq/jobs"
)

// reportRepo is an in-memory VCSStore for one suite and its runs.
type reportRepo struct {
	mu     sync.Mutex
	suite  *Suite
	runs   map[string]*Run
	states map[string]VCSReportState
}

func (f *reportRepo) GetSuite(context.Context, string) (*Suite, error) { return f.suite, nil }
func (f *reportRepo) GetRunSummary(_ context.Context, id string) (*Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.runs[id]
	if !ok {
		return nil, jobs.ErrNotFound
	}
	c := *r
	return &c, nil
}
func (f *reportRepo) VCSComment(context.Context, string, int) (string, error)  { return "", nil }
func (f *reportRepo) SetVCSComment(context.Context, string, int, string) error { return nil }
func (f *reportRepo) WithVCSReport(_ context.Context, runID string, fn func(VCSReportState) (VCSReportState, error)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	next, err := fn(f.states[runID])
	f.states[runID] = next
	return err
}

// Whatever order a run's report tasks run in, and however many times, the
// code host gets its start (pending) once, then its end once: a late start
// report is dropped, an end report that finds the start undelivered sends it
// first, and each task sends what was decided when its event happened.
func TestReporterOrder(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"status", "check"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var got []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var b map[string]any
				raw, _ := io.ReadAll(r.Body)
				_ = json.Unmarshal(raw, &b)
				mu.Lock()
				got = append(got, fmt.Sprintf("%s %v %v %v", r.Method, b["state"], b["status"], b["conclusion"]))
				mu.Unlock()
				w.WriteHeader(http.StatusCreated)
				fmt.Fprint(w, `{"id": 7}`)
			}))
			defer srv.Close()
			s := &Suite{ID: "s1", Name: "site", VCS: &VCS{Provider: "github", APIURL: srv.URL, Repo: "a/b", Token: "t", GitHubMode: mode}}
			run := &Run{ID: "r1", SuiteID: "s1", Status: RunRunning, Commit: "abc", Counts: RunCounts{Pending: 2}}
			repo := &reportRepo{suite: s, runs: map[string]*Run{"r1": run}, states: map[string]VCSReportState{}}
			start := ReportOf(run, SeqStart)
			settled := *run
			settled.Status, settled.Counts = RunFailed, RunCounts{Total: 2, Failed: 1, Passed: 1}
			end := ReportOf(&settled, SeqEnd)
			// The run is approved by now: a task that re-read the run would say success.
			repo.runs["r1"] = &Run{ID: "r1", SuiteID: "s1", Status: RunApproved, Commit: "abc", Counts: settled.Counts}
			rp := &Reporter{Repo: repo, HTTP: srv.Client()}
			for _, rep := range []VCSReport{end, start, end} {
				p := VCSReportPayload{ReportID: jobs.NewID(), RunID: "r1", Seq: rep.Seq, RunStatus: string(rep.RunStatus),
					State: rep.State, Description: rep.Description}
				if err := rp.Run(context.Background(), p); err != nil {
					t.Fatal(err)
				}
			}
			want := []string{"POST pending <nil> <nil>", "POST failure <nil> <nil>"}
			if mode == "check" {
				want = []string{"POST <nil> in_progress <nil>", "PATCH <nil> completed failure"}
			}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Fatalf("the code host got %q, want %q", got, want)
			}
		})
	}
}
