package e2e

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
	"time"

	"github.com/jackc/pgx/v5"
)

// ghRequest is one request the fake GitHub API received.
type ghRequest struct {
	Method, Path, Auth, Accept string
	Body                       map[string]any
}

// fakeGitHub records requests to GitHub's REST API paths snapq uses and
// answers as GitHub does: 201 for a new status, comment or check run (with
// an id; every check run is 4242), 200 for an edited comment or check run.
type fakeGitHub struct {
	mu   sync.Mutex
	reqs []ghRequest
}

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	f.mu.Lock()
	f.reqs = append(f.reqs, ghRequest{Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization"),
		Accept: r.Header.Get("Accept"), Body: body})
	n := len(f.reqs)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodPatch {
		fmt.Fprint(w, `{"id": 9001}`)
		return
	}
	w.WriteHeader(http.StatusCreated)
	if strings.HasSuffix(r.URL.Path, "/check-runs") {
		fmt.Fprint(w, `{"id": 4242, "status": "in_progress"}`)
		return
	}
	fmt.Fprintf(w, `{"id": %d}`, map[bool]int{true: 9001, false: n}[strings.HasSuffix(r.URL.Path, "/comments")])
}

func (f *fakeGitHub) list() []ghRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ghRequest(nil), f.reqs...)
}

// waitFor polls the fake until ok holds for its requests.
func (f *fakeGitHub) waitFor(t *testing.T, what string, ok func([]ghRequest) bool) []ghRequest {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		reqs := f.list()
		if ok(reqs) {
			return reqs
		}
		if time.Now().After(deadline) {
			t.Fatalf("fake GitHub: %s not seen in 60 s; requests: %+v", what, reqs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func statusesOf(reqs []ghRequest) []ghRequest {
	var out []ghRequest
	for _, r := range reqs {
		if strings.Contains(r.Path, "/statuses/") {
			out = append(out, r)
		}
	}
	return out
}

func commentsOf(reqs []ghRequest) []ghRequest {
	var out []ghRequest
	for _, r := range reqs {
		if strings.Contains(r.Path, "/comments") {
			out = append(out, r)
		}
	}
	return out
}

// A pull request's run against a preview origin is reported to a fake
// GitHub (on loopback, through the egress guard): pending, then failure with
// the exact counts and the run's link, and one comment; a second push edits
// that comment; approving flips the status to success. The token is never
// shown.
func TestGitHubStatuses(t *testing.T) {
	t.Parallel()
	// The token is stored sealed with SNAPQ_SECRET_KEY.
	s := sharedStack(t)
	gh := &fakeGitHub{}
	api := httptest.NewServer(gh)
	t.Cleanup(api.Close)
	prod := httptest.NewServer(&changingSite{color: "#223344", blocks: 1})
	t.Cleanup(prod.Close)
	preview := httptest.NewServer(&changingSite{color: "#aa2211", blocks: 1})
	t.Cleanup(preview.Close)

	var suite map[string]any
	code := s.do("POST", "/v1/suites", map[string]any{"name": "gated",
		"targets": []map[string]any{{"url": prod.URL + "/page", "name": "home"}},
		"vcs":     map[string]any{"provider": "github", "api_url": api.URL + "/api/v3", "repo": "acme/site", "token": "ghp_secret"}}, &suite)
	if code != http.StatusCreated {
		t.Fatalf("create suite: %d %v", code, suite)
	}
	if raw, _ := json.Marshal(suite); strings.Contains(string(raw), "ghp_secret") {
		t.Fatalf("the suite shows its token: %s", raw)
	}
	id := suite["id"].(string)
	// The database holds the token only as ciphertext.
	conn, err := pgx.Connect(context.Background(), s.stackDB())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var plain *string
	var sealed []byte
	if err := conn.QueryRow(context.Background(), `SELECT vcs_token, vcs_token_sealed FROM suites WHERE id = $1`, id).
		Scan(&plain, &sealed); err != nil {
		t.Fatal(err)
	}
	if plain != nil || len(sealed) < 20 || strings.Contains(string(sealed), "ghp_secret") {
		t.Fatalf("stored token: plaintext %v, sealed %q", plain, sealed)
	}
	main := s.waitRun(s.startRun(id), 2*time.Minute)
	if code := s.do("POST", "/v1/runs/"+main.ID+"/approve", map[string]any{"all": true}, nil); code != http.StatusOK {
		t.Fatalf("approve main: %d", code)
	}
	if n := len(gh.list()); n != 0 {
		t.Fatalf("%d requests to GitHub for runs without a commit", n)
	}

	const sha = "0123456789abcdef0123456789abcdef01234567"
	push := func() runResp {
		var r runResp
		if code := s.do("POST", "/v1/suites/"+id+"/runs", map[string]any{"branch": "feature/x", "commit": sha,
			"pull_request": 42, "base_url": preview.URL}, &r); code != http.StatusAccepted {
			t.Fatalf("branch run: %d", code)
		}
		return s.waitRun(r.ID, 2*time.Minute)
	}
	r1 := push()
	if r1.Status != "failed" {
		t.Fatalf("branch run %s: %s", r1.Status, statuses(r1))
	}
	reqs := gh.waitFor(t, "failure status and a comment", func(rs []ghRequest) bool {
		st := statusesOf(rs)
		return len(st) >= 2 && st[len(st)-1].Body["state"] == "failure" && len(commentsOf(rs)) == 1
	})
	st := statusesOf(reqs)
	if st[0].Body["state"] != "pending" {
		t.Fatalf("first status %+v, want pending", st[0].Body)
	}
	link := s.api + "/#/runs/" + r1.ID
	for _, r := range st {
		if r.Method != "POST" || r.Path != "/api/v3/repos/acme/site/statuses/"+sha || r.Auth != "Bearer ghp_secret" ||
			r.Accept != "application/vnd.github+json" || r.Body["context"] != "snapq" || r.Body["target_url"] != link {
			t.Fatalf("status request %+v", r)
		}
	}
	if d := st[len(st)-1].Body["description"]; d != "1 changed, 0 new, 0 passed" {
		t.Fatalf("failure description %q", d)
	}
	c := commentsOf(reqs)[0]
	if c.Method != "POST" || c.Path != "/api/v3/repos/acme/site/issues/42/comments" || c.Auth != "Bearer ghp_secret" ||
		!strings.Contains(c.Body["body"].(string), "1 changed, 0 new, 0 passed") || !strings.Contains(c.Body["body"].(string), link) {
		t.Fatalf("comment request %+v", c)
	}

	// A second push: the same comment is edited, not posted again.
	r2 := push()
	reqs = gh.waitFor(t, "the comment edited", func(rs []ghRequest) bool { return len(commentsOf(rs)) == 2 })
	edit := commentsOf(reqs)[1]
	if edit.Method != "PATCH" || edit.Path != "/api/v3/repos/acme/site/issues/comments/9001" ||
		!strings.Contains(edit.Body["body"].(string), r2.ID) {
		t.Fatalf("second comment request %+v; want a PATCH of comment 9001", edit)
	}

	// Approving flips the status to success.
	if code := s.do("POST", "/v1/runs/"+r2.ID+"/approve", map[string]any{"all": true}, nil); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	// The status and the comment edit are two requests; wait for both (the comment may follow the status).
	reqs = gh.waitFor(t, "a success status and the comment edited again", func(rs []ghRequest) bool {
		st := statusesOf(rs)
		return st[len(st)-1].Body["state"] == "success" && len(commentsOf(rs)) >= 3
	})
	if n := len(commentsOf(reqs)); n != 3 || commentsOf(reqs)[2].Method != "PATCH" {
		t.Fatalf("comments after approval: %+v", commentsOf(reqs))
	}
}

func checksOf(reqs []ghRequest) []ghRequest {
	var out []ghRequest
	for _, r := range reqs {
		if strings.Contains(r.Path, "/check-runs") {
			out = append(out, r)
		}
	}
	return out
}

// A suite in vcs.github_mode "check" reports a branch run as one GitHub
// check run: created in progress when the run starts (name, head_sha,
// details_url), updated to completed/failure with the counts as the
// output's title when it fails, and to success when it is approved; no
// commit status is sent.
func TestGitHubCheckRuns(t *testing.T) {
	t.Parallel()
	s := sharedStack(t)
	gh := &fakeGitHub{}
	api := httptest.NewServer(gh)
	t.Cleanup(api.Close)
	prod := httptest.NewServer(&changingSite{color: "#223344", blocks: 1})
	t.Cleanup(prod.Close)
	preview := httptest.NewServer(&changingSite{color: "#aa2211", blocks: 1})
	t.Cleanup(preview.Close)

	var bad errResp
	if code := s.do("POST", "/v1/suites", map[string]any{"name": "x", "targets": []map[string]any{{"url": prod.URL + "/page"}},
		"vcs": map[string]any{"provider": "github", "repo": "acme/site", "token": "t", "github_mode": "checks"}}, &bad); code != http.StatusBadRequest ||
		!strings.Contains(bad.Error.Message+fmt.Sprint(bad.Error.Fields), "github_mode") {
		t.Fatalf("bad github_mode: %d %+v", code, bad.Error)
	}
	var suite map[string]any
	if code := s.do("POST", "/v1/suites", map[string]any{"name": "checked",
		"targets": []map[string]any{{"url": prod.URL + "/page", "name": "home"}},
		"vcs": map[string]any{"provider": "github", "api_url": api.URL + "/api/v3", "repo": "acme/site", "token": "ghs_app",
			"github_mode": "check", "context": "visual"}}, &suite); code != http.StatusCreated {
		t.Fatalf("create suite: %d %v", code, suite)
	}
	if v, _ := suite["vcs"].(map[string]any); v["github_mode"] != "check" {
		t.Fatalf("suite vcs %v; want github_mode check", suite["vcs"])
	}
	id := suite["id"].(string)
	main := s.waitRun(s.startRun(id), 2*time.Minute)
	if code := s.do("POST", "/v1/runs/"+main.ID+"/approve", map[string]any{"all": true}, nil); code != http.StatusOK {
		t.Fatalf("approve main: %d", code)
	}

	const sha = "89abcdef0123456789abcdef0123456789abcdef"
	var r runResp
	if code := s.do("POST", "/v1/suites/"+id+"/runs", map[string]any{"branch": "feature/y", "commit": sha,
		"base_url": preview.URL}, &r); code != http.StatusAccepted {
		t.Fatalf("branch run: %d", code)
	}
	if r = s.waitRun(r.ID, 2*time.Minute); r.Status != "failed" {
		t.Fatalf("branch run %s: %s", r.Status, statuses(r))
	}
	link := s.api + "/#/runs/" + r.ID
	reqs := gh.waitFor(t, "a completed check run", func(rs []ghRequest) bool {
		cs := checksOf(rs)
		return len(cs) >= 2 && cs[len(cs)-1].Body["status"] == "completed"
	})
	if st := statusesOf(reqs); len(st) != 0 {
		t.Fatalf("commit statuses in check mode: %+v", st)
	}
	cs := checksOf(reqs)
	create := cs[0]
	if create.Method != "POST" || create.Path != "/api/v3/repos/acme/site/check-runs" || create.Auth != "Bearer ghs_app" ||
		create.Accept != "application/vnd.github+json" || create.Body["name"] != "visual" || create.Body["head_sha"] != sha ||
		create.Body["status"] != "in_progress" || create.Body["details_url"] != link || create.Body["external_id"] != r.ID ||
		create.Body["conclusion"] != nil {
		t.Fatalf("check run creation %+v", create)
	}
	for _, u := range cs[1:] {
		if u.Method != "PATCH" || u.Path != "/api/v3/repos/acme/site/check-runs/4242" || u.Body["head_sha"] != nil {
			t.Fatalf("check run update %+v; want a PATCH of check run 4242", u)
		}
	}
	done := cs[len(cs)-1].Body
	out, _ := done["output"].(map[string]any)
	if done["conclusion"] != "failure" || done["completed_at"] == nil || out["title"] != "1 changed, 0 new, 0 passed" ||
		!strings.Contains(fmt.Sprint(out["summary"]), link) {
		t.Fatalf("completed check run %+v", done)
	}

	// Approving completes the same check run again, now a success.
	if code := s.do("POST", "/v1/runs/"+r.ID+"/approve", map[string]any{"all": true}, nil); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}
	reqs = gh.waitFor(t, "a successful check run", func(rs []ghRequest) bool {
		cs := checksOf(rs)
		return cs[len(cs)-1].Body["conclusion"] == "success"
	})
	cs = checksOf(reqs)
	if last := cs[len(cs)-1]; last.Method != "PATCH" || last.Path != "/api/v3/repos/acme/site/check-runs/4242" {
		t.Fatalf("approval's check run request %+v", last)
	}
	if n := len(cs) - len(cs[1:]); n != 1 {
		t.Fatalf("%d check runs created, want 1", n)
	}
	for _, c := range cs[1:] {
		if c.Method == "POST" {
			t.Fatalf("a second check run was created: %+v", c)
		}
	}
}
