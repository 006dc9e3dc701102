package vcs_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/vcs"
)

type recorded struct {
	Method, Path, Auth string
	Body               map[string]string
}

// fakeHost records requests and answers comments with id 77.
func fakeHost(t *testing.T, status int) (*httptest.Server, func() []recorded) {
	t.Helper()
	var mu sync.Mutex
	var reqs []recorded
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]string
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("%s %s: body %q is not a JSON object of strings", r.Method, r.URL.Path, raw)
		}
		auth := r.Header.Get("Authorization")
		if tok := r.Header.Get("PRIVATE-TOKEN"); tok != "" {
			auth = "PRIVATE-TOKEN " + tok
		}
		mu.Lock()
		reqs = append(reqs, recorded{Method: r.Method, Path: r.URL.EscapedPath(), Auth: auth, Body: body})
		mu.Unlock()
		w.WriteHeader(status)
		io.WriteString(w, `{"id": 77}`)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []recorded {
		mu.Lock()
		defer mu.Unlock()
		return append([]recorded(nil), reqs...)
	}
}

func TestGitHub(t *testing.T) {
	srv, reqs := fakeHost(t, http.StatusCreated)
	c := &vcs.Client{Config: vcs.Config{Provider: vcs.GitHub, APIURL: srv.URL + "/api/v3/", Repo: "acme/site", Token: "ghp_x"}}
	ctx := context.Background()
	if err := c.SetStatus(ctx, vcs.Status{SHA: "abc1234", State: vcs.Failure, Description: vcs.Summary(3, 1, 120, 0, 0),
		TargetURL: "http://snapq/#/runs/1"}); err != nil {
		t.Fatal(err)
	}
	id, err := c.UpsertComment(ctx, 42, "", "first")
	if err != nil || id != "77" {
		t.Fatalf("new comment: %q, %v", id, err)
	}
	if _, err := c.UpsertComment(ctx, 42, id, "second"); err != nil {
		t.Fatal(err)
	}
	want := []recorded{
		{Method: "POST", Path: "/api/v3/repos/acme/site/statuses/abc1234", Auth: "Bearer ghp_x", Body: map[string]string{
			"state": "failure", "context": "snapq", "description": "3 changed, 1 new, 120 passed", "target_url": "http://snapq/#/runs/1"}},
		{Method: "POST", Path: "/api/v3/repos/acme/site/issues/42/comments", Auth: "Bearer ghp_x", Body: map[string]string{"body": "first"}},
		{Method: "PATCH", Path: "/api/v3/repos/acme/site/issues/comments/77", Auth: "Bearer ghp_x", Body: map[string]string{"body": "second"}},
	}
	if diff := cmp.Diff(want, reqs()); diff != "" {
		t.Fatalf("requests (-want +got):\n%s", diff)
	}
}

func TestGitLab(t *testing.T) {
	srv, reqs := fakeHost(t, http.StatusCreated)
	c := &vcs.Client{Config: vcs.Config{Provider: vcs.GitLab, APIURL: srv.URL + "/api/v4", Repo: "group/site", Token: "glpat"}}
	ctx := context.Background()
	if err := c.SetStatus(ctx, vcs.Status{SHA: "abc1234", State: vcs.Failure, Description: "1 changed", TargetURL: "http://x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpsertComment(ctx, 5, "", "first"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpsertComment(ctx, 5, "77", "second"); err != nil {
		t.Fatal(err)
	}
	want := []recorded{
		{Method: "POST", Path: "/api/v4/projects/group%2Fsite/statuses/abc1234", Auth: "PRIVATE-TOKEN glpat", Body: map[string]string{
			"state": "failed", "name": "snapq", "description": "1 changed", "target_url": "http://x"}},
		{Method: "POST", Path: "/api/v4/projects/group%2Fsite/merge_requests/5/notes", Auth: "PRIVATE-TOKEN glpat", Body: map[string]string{"body": "first"}},
		{Method: "PUT", Path: "/api/v4/projects/group%2Fsite/merge_requests/5/notes/77", Auth: "PRIVATE-TOKEN glpat", Body: map[string]string{"body": "second"}},
	}
	if diff := cmp.Diff(want, reqs()); diff != "" {
		t.Fatalf("requests (-want +got):\n%s", diff)
	}
}

func TestRejectedIsPermanent(t *testing.T) {
	for _, tt := range []struct {
		name      string
		status    int
		permanent bool
	}{{"unauthorized", 401, true}, {"rate limited", 429, false}, {"server error", 502, false}} {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := fakeHost(t, tt.status)
			c := &vcs.Client{Config: vcs.Config{Provider: vcs.GitHub, APIURL: srv.URL, Repo: "a/b", Token: "x"}}
			err := c.SetStatus(context.Background(), vcs.Status{SHA: "abc1234", State: vcs.Pending})
			if err == nil || errors.Is(err, vcs.ErrRejected) != tt.permanent {
				t.Fatalf("err %v; permanent want %v", err, tt.permanent)
			}
		})
	}
}

// An api_url is https; plain http only to a loopback host, where a token
// does not cross a network.
func TestCheckAPIURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, url string
		ok        bool
	}{
		{"default", "", true},
		{"https", "https://ghe.example.com/api/v3", true},
		{"http to a remote host", "http://ghe.example.com/api/v3", false},
		{"http to a public address", "http://203.0.113.7/api/v4", false},
		{"http to loopback v4", "http://127.0.0.1:8080/api/v3", true},
		{"http to loopback v6", "http://[::1]:8080/api/v4", true},
		{"http to localhost", "http://localhost:9000/api/v4", true},
		{"http to a name that looks local", "http://localhost.evil.example/api", false},
		{"user info", "https://user:pw@ghe.example.com/api/v3", false},
		{"ftp", "ftp://ghe.example.com/", false},
		{"relative", "/api/v3", false},
	} {
		err := vcs.CheckAPIURL(tc.url)
		if (err == nil) != tc.ok {
			t.Errorf("%s: CheckAPIURL(%q) = %v, want ok=%v", tc.name, tc.url, err, tc.ok)
		}
		cfg := vcs.Config{Provider: vcs.GitHub, Repo: "a/b", Token: "t", APIURL: tc.url}
		if err := cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Config.Validate = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
