package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snapq/snapq/authprofile"
	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/internal/contract"
	"github.com/snapq/snapq/jobs"
)

// memProfiles is an in-memory authprofile.Repository.
type memProfiles struct {
	mu sync.Mutex
	m  map[string]*authprofile.Profile
}

func (r *memProfiles) CreateAuthProfile(_ context.Context, p *authprofile.Profile, _ []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.m {
		if o.Name == p.Name {
			return authprofile.ErrNameTaken
		}
	}
	c := *p
	r.m[p.ID] = &c
	return nil
}

func (r *memProfiles) GetAuthProfile(_ context.Context, id string) (*authprofile.Profile, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.m[id]
	if !ok {
		return nil, jobs.ErrNotFound
	}
	c := *p
	return &c, nil
}

func (r *memProfiles) AuthProfileOfBatch(context.Context, string, string) (*authprofile.Profile, error) {
	return nil, jobs.ErrNotFound
}

func (r *memProfiles) ListAuthProfiles(context.Context, string) ([]*authprofile.Profile, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*authprofile.Profile
	for _, p := range r.m {
		c := *p
		out = append(out, &c)
	}
	return out, nil
}

func (r *memProfiles) UpdateAuthProfile(_ context.Context, p *authprofile.Profile) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := *p
	r.m[p.ID] = &c
	return nil
}

func (r *memProfiles) DeleteAuthProfile(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, id)
	return nil
}

func (r *memProfiles) AddAuthState(_ context.Context, id string, _ int, _ []byte, _ string, _ []capture.LogEntry) (int, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.m[id]
	p.Version++
	now := time.Now().UTC()
	p.LastLoginAt = &now
	return p.Version, true, nil
}

func (r *memProfiles) AuthState(context.Context, string) (int, []byte, time.Time, error) {
	return 0, nil, time.Time{}, nil
}

func (r *memProfiles) RecordAuthFailure(context.Context, string, string, []capture.LogEntry) error {
	return nil
}

func (r *memProfiles) RecordAuthTest(context.Context, string, string, string, []capture.LogEntry) error {
	return nil
}

// TestAuthProfilesMatchDocument: each auth-profile answer, successes and
// errors, is what web/openapi.json says (the e2e tests do not change or
// delete a profile of their own).
func TestAuthProfilesMatchDocument(t *testing.T) {
	t.Parallel()
	v, err := contract.Load(OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := authprofile.NewSealer(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	newServer := func(sl *authprofile.Sealer) http.Handler {
		s := &Server{Service: &jobs.Service{Repo: &fakeRepo{}, Queue: &fakeQueue{}}, Batches: &fakeRepo{},
			AuthProfiles: &authprofile.Service{Repo: &memProfiles{m: map[string]*authprofile.Profile{}}, Sealer: sl},
			Config:       Config{MaxBodyBytes: 1 << 20, AllowedHosts: testHosts}}
		return s.Handler()
	}
	h := newServer(sealer)
	call := func(h http.Handler, method, path, body string, want int) string {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, rec.Code, rec.Body, want)
		}
		if viol := v.Check(context.Background(), contract.Exchange{Request: req, RequestBody: []byte(body), Status: rec.Code,
			Header: rec.Header(), Body: rec.Body.Bytes()}); viol != nil {
			t.Errorf("%s", viol)
		}
		return rec.Header().Get("Location")
	}
	recipe := `{"name": "shop", "origins": ["http://127.0.0.1:8080"], "login_url": "http://127.0.0.1:8080/login",
		"steps": [{"type": "type", "selector": "#user", "text": "alice"}, {"type": "type", "selector": "#password", "secret": "password"},
		{"type": "click", "selector": "button"}], "success": {"selector": "#account"},
		"logged_out": {"url_prefix": "http://127.0.0.1:8080/login", "statuses": [401]}, "refresh_every_s": 3600,
		"secrets": {"password": "hunter2"}}`
	loc := call(h, "POST", "/v1/auth-profiles", recipe, http.StatusCreated)
	call(h, "POST", "/v1/auth-profiles", recipe, http.StatusConflict)
	call(h, "POST", "/v1/auth-profiles", `{"name": "x", "origins": ["http://127.0.0.1:8080"]}`, http.StatusBadRequest)
	call(h, "GET", loc, "", http.StatusOK)
	call(h, "GET", "/v1/auth-profiles", "", http.StatusOK)
	call(h, "PATCH", loc, `{"secrets": {"password": null, "pin": "1234"}, "steps": [{"type": "type", "selector": "#pin", "secret": "pin"}],
		"storage_state": {"cookies": [{"name": "s", "value": "v", "domain": "127.0.0.1", "path": "/", "expires": -1, "httpOnly": true,
		"secure": false, "sameSite": "Lax"}], "origins": [{"origin": "http://127.0.0.1:8080", "localStorage": [{"name": "t", "value": "x"}]}]}}`,
		http.StatusOK)
	call(h, "POST", "/v1/auth-profiles", `{"name": "up", "origins": ["http://127.0.0.1:8080"],
		"storage_state": {"cookies": [{"name": "s", "value": "v", "domain": "127.0.0.1"}], "origins": []}}`, http.StatusCreated)
	call(h, "DELETE", loc, "", http.StatusNoContent)
	call(h, "GET", loc, "", http.StatusNotFound)
	call(newServer(nil), "POST", "/v1/auth-profiles", recipe, http.StatusNotImplemented)
}
