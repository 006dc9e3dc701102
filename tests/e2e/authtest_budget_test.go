package e2e

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestAuthTestBudgetAndProfileCap: a key holds at most
// SNAPQ_MAX_AUTH_PROFILES_PER_KEY profiles (409 too_many_auth_profiles, other
// keys unaffected), and runs at most SNAPQ_BUDGET_AUTH_TEST_PER_KEY auth tests
// at once: while one test holds the login page, the key's next test is refused
// with 429 concurrency_limit and Retry-After before any work, and another key's
// test is served (issue 25, Medium 5).
func TestAuthTestBudgetAndProfileCap(t *testing.T) {
	t.Parallel()
	// The login page answers only once released; each caller's first request
	// says its test is running (alice's logins load /login, bob's /login?who=bob).
	arrivedA, arrivedB, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var onceA, onceB sync.Once
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/login" {
			http.NotFound(w, r)
			return
		}
		if r.URL.Query().Get("who") == "bob" {
			onceB.Do(func() { close(arrivedB) })
		} else {
			onceA.Do(func() { close(arrivedA) })
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		_, _ = w.Write([]byte(`<html><body><input id="username"><input id="password"><button id="submit">go</button></body></html>`))
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	s := startStack(t, "SNAPQ_AUTH=on", "SNAPQ_SECRET_KEY="+secretKey(t), "SNAPQ_WORKER_CONCURRENCY=2",
		"SNAPQ_MAX_AUTH_PROFILES_PER_KEY=2", "SNAPQ_BUDGET_AUTH_TEST_PER_KEY=1")
	a := map[string]string{"Authorization": "Bearer " + s.apiKey("alice")}
	b := map[string]string{"Authorization": "Bearer " + s.apiKey("bob")}

	var p1, p2, pb profileResp
	var e errResp
	if code, _ := s.doWith("POST", "/v1/auth-profiles", a, recipe("slow-1", slow.URL, "pw-one"), &p1); code != http.StatusCreated {
		t.Fatalf("create 1: %d", code)
	}
	if code, _ := s.doWith("POST", "/v1/auth-profiles", a, recipe("slow-2", slow.URL, "pw-two"), &p2); code != http.StatusCreated {
		t.Fatalf("create 2: %d", code)
	}
	if code, _ := s.doWith("POST", "/v1/auth-profiles", a, recipe("slow-3", slow.URL, "pw-three"), &e); code != http.StatusConflict || e.Error.Code != "too_many_auth_profiles" {
		t.Fatalf("third profile of one key: %d %q, want 409 too_many_auth_profiles", code, e.Error.Code)
	}
	bobs := recipe("slow-b", slow.URL, "pw-bob")
	bobs["login_url"] = slow.URL + "/login?who=bob"
	if code, _ := s.doWith("POST", "/v1/auth-profiles", b, bobs, &pb); code != http.StatusCreated {
		t.Fatalf("another key's first profile: %d, want 201", code)
	}

	first := make(chan int, 1)
	go func() {
		code, _ := s.doWith("POST", "/v1/auth-profiles/"+p1.ID+"/test", a, nil, nil)
		first <- code
	}()
	waitClosed(t, arrivedA, "the first test to load the login page") // the first test's login is loading: the key's one slot is taken
	code, h := s.doWith("POST", "/v1/auth-profiles/"+p2.ID+"/test", a, nil, &e)
	if code != http.StatusTooManyRequests || e.Error.Code != "concurrency_limit" || h.Get("Retry-After") == "" {
		t.Fatalf("second concurrent test of one key: %d %q Retry-After %q, want 429 concurrency_limit with Retry-After",
			code, e.Error.Code, h.Get("Retry-After"))
	}
	other := make(chan int, 1)
	go func() {
		code, _ := s.doWith("POST", "/v1/auth-profiles/"+pb.ID+"/test", b, nil, nil)
		other <- code
	}()
	waitClosed(t, arrivedB, "another key's test to load the login page") // another key's test runs while the first key is at its cap
	close(release)
	if code := <-first; code != http.StatusOK {
		t.Errorf("the first test answered %d, want 200 (its verdict in the body)", code)
	}
	if code := <-other; code != http.StatusOK {
		t.Errorf("another key's test answered %d while the first key was at its cap, want 200", code)
	}
	// The slot is free again once the first test ended.
	if code, _ := s.doWith("POST", "/v1/auth-profiles/"+p2.ID+"/test", a, nil, nil); code != http.StatusOK {
		t.Errorf("the key's test after the first ended: %d, want 200", code)
	}
}

// waitClosed waits for ch to close: progress the test needs, bounded so a
// broken stack fails the test instead of hanging the package (an auth test's
// own hard cap is 150 s).
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(150 * time.Second):
		t.Fatalf("waited 150 s for %s", what)
	}
}
