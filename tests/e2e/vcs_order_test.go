package e2e

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"encoding/json"

	"github.com/hibiken/asynq"
)

// codeHostAttempt is one report request a fake code host answered.
type codeHostAttempt struct {
	Method, Path string
	State        string // pending, success, failure, failed, error (a check run: pending while in progress, else its conclusion)
	Code         int
}

// fakeCodeHost answers GitHub's commit statuses and check runs, or GitLab's
// commit statuses. While hold is set it answers 503 to every report of the
// pending state: the start report cannot be delivered, as when its task
// runs late. Like GitLab, it refuses (400) a status equal to the last one
// it accepted ("Cannot transition status via :drop from :failed").
type fakeCodeHost struct {
	mu       sync.Mutex
	hold     bool
	attempts []codeHostAttempt
}

func (f *fakeCodeHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	state, _ := body["state"].(string)
	if strings.Contains(r.URL.Path, "/check-runs") {
		state, _ = body["conclusion"].(string)
		if body["status"] == "in_progress" {
			state = "pending"
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	code := http.StatusCreated
	if r.Method == http.MethodPatch {
		code = http.StatusOK
	}
	if last := f.acceptedLocked(); f.hold && state == "pending" {
		code = http.StatusServiceUnavailable
	} else if strings.Contains(r.URL.Path, "/statuses/") && len(last) > 0 && last[len(last)-1] == state {
		code = http.StatusBadRequest
	}
	f.attempts = append(f.attempts, codeHostAttempt{Method: r.Method, Path: r.URL.Path, State: state, Code: code})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if code >= 300 {
		fmt.Fprintf(w, `{"message": "refused by the fake (%d)"}`, code)
		return
	}
	fmt.Fprint(w, `{"id": 4242}`)
}

func (f *fakeCodeHost) open() {
	f.mu.Lock()
	f.hold = false
	f.mu.Unlock()
}

// acceptedLocked is the states answered 2xx, in order.
func (f *fakeCodeHost) acceptedLocked() []string {
	var out []string
	for _, a := range f.attempts {
		if a.Code < 300 {
			out = append(out, a.State)
		}
	}
	return out
}

func (f *fakeCodeHost) accepted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.acceptedLocked()
}

func (f *fakeCodeHost) all() []codeHostAttempt {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]codeHostAttempt(nil), f.attempts...)
}

// reportTasks counts the stack's vcs:report tasks still to run (pending,
// active, scheduled or waiting for a retry), and those waiting for a retry.
func (s *stack) reportTasks() (open, retry int) {
	s.t.Helper()
	opt, err := asynq.ParseRedisURI(s.env("SNAPQ_REDIS_URL"))
	if err != nil {
		s.t.Fatal(err)
	}
	ins := asynq.NewInspector(opt)
	defer ins.Close()
	for _, q := range []string{"reports", "webhooks"} {
		lists := []func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error){
			ins.ListPendingTasks, ins.ListActiveTasks, ins.ListScheduledTasks, ins.ListRetryTasks}
		for i, list := range lists {
			ts, err := list(q, asynq.PageSize(1000))
			if errors.Is(err, asynq.ErrQueueNotFound) {
				break
			}
			if err != nil {
				s.t.Fatalf("list %s tasks: %v", q, err)
			}
			for _, t := range ts {
				if t.Type == "vcs:report" {
					open++
					if i == 3 {
						retry++
					}
				}
			}
		}
	}
	return open, retry
}

// A run's start report that cannot be delivered until the run settled (its
// task runs late) does not turn into a second final state, and the final
// state does not overtake it: GitHub statuses, a GitHub check run and GitLab
// statuses each get exactly `pending`, then the final state, once each.
func TestVCSReportOrder(t *testing.T) {
	t.Parallel()
	s := startStack(t, "SNAPQ_SECRET_KEY="+secretKey(t))
	prod := httptest.NewServer(&changingSite{color: "#223344", blocks: 1})
	t.Cleanup(prod.Close)
	preview := httptest.NewServer(&changingSite{color: "#aa2211", blocks: 1})
	t.Cleanup(preview.Close)
	cases := []struct {
		name, provider, mode, path, final string
	}{
		{name: "github-status", provider: "github", path: "/api/v3", final: "failure"},
		{name: "github-check", provider: "github", mode: "check", path: "/api/v3", final: "failure"},
		{name: "gitlab", provider: "gitlab", path: "/api/v4", final: "failed"},
	}
	hosts := make([]*fakeCodeHost, len(cases))
	suites := make([]string, len(cases))
	mains := make([]string, len(cases))
	for i, tc := range cases {
		hosts[i] = &fakeCodeHost{hold: true}
		srv := httptest.NewServer(hosts[i])
		t.Cleanup(srv.Close)
		v := map[string]any{"provider": tc.provider, "api_url": srv.URL + tc.path, "repo": "acme/site", "token": "tok-" + tc.name}
		if tc.mode != "" {
			v["github_mode"] = tc.mode
		}
		var suite map[string]any
		if code := s.do("POST", "/v1/suites", map[string]any{"name": tc.name,
			"targets": []map[string]any{{"url": prod.URL + "/page", "name": "home"}}, "vcs": v}, &suite); code != http.StatusCreated {
			t.Fatalf("%s: create suite: %d %v", tc.name, code, suite)
		}
		suites[i] = suite["id"].(string)
		mains[i] = s.startRun(suites[i])
	}
	for _, id := range mains {
		s.waitRun(id, 2*time.Minute)
		s.approveAll(id)
	}
	const sha = "fedcba9876543210fedcba9876543210fedcba98"
	runs := make([]string, len(cases))
	for i := range cases {
		var r runResp
		if code := s.do("POST", "/v1/suites/"+suites[i]+"/runs", map[string]any{"branch": "feature/z", "commit": sha,
			"base_url": preview.URL}, &r); code != http.StatusAccepted {
			t.Fatalf("%s: branch run: %d", cases[i].name, code)
		}
		runs[i] = r.ID
	}
	for i, id := range runs {
		if r := s.waitRun(id, 2*time.Minute); r.Status != "failed" {
			t.Fatalf("%s: branch run %s: %s", cases[i].name, r.Status, statuses(r))
		}
	}
	// Every report task has run at least once (none waits for its first
	// attempt): the start reports were refused, whatever ran after them.
	deadline := time.Now().Add(60 * time.Second)
	for open, retry := s.reportTasks(); open != retry; open, retry = s.reportTasks() {
		if time.Now().After(deadline) {
			t.Fatalf("report tasks not all tried in 60 s: %d open, %d waiting for a retry", open, retry)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, h := range hosts {
		h.open()
	}
	deadline = time.Now().Add(3 * time.Minute)
	for open, _ := s.reportTasks(); open > 0; open, _ = s.reportTasks() {
		if time.Now().After(deadline) {
			t.Fatalf("%d report tasks still to run after 3 minutes", open)
		}
		time.Sleep(250 * time.Millisecond)
	}
	for i, tc := range cases {
		got := hosts[i].accepted()
		want := []string{"pending", tc.final}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: the code host accepted %v, want %v; every request: %+v", tc.name, got, want, hosts[i].all())
		}
		for _, a := range hosts[i].all() {
			if a.Code == http.StatusBadRequest {
				t.Errorf("%s: a report repeated the last state: %+v", tc.name, a)
			}
		}
	}
	// The check run was created once and completed by a PATCH of it.
	var creates, patches int
	for _, a := range hosts[1].all() {
		switch {
		case a.Code >= 300:
		case a.Method == http.MethodPost && a.Path == "/api/v3/repos/acme/site/check-runs":
			creates++
		case a.Method == http.MethodPatch && a.Path == "/api/v3/repos/acme/site/check-runs/4242":
			patches++
		}
	}
	if creates != 1 || patches != 1 {
		t.Errorf("check run: %d created, %d updated; want 1 and 1: %+v", creates, patches, hosts[1].all())
	}
}
