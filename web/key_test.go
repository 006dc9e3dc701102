package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/internal/contract"
	"github.com/snapq/snapq/jobs"
)

// oneKey knows one key, k.
type oneKey struct{ k *jobs.APIKey }

func (o oneKey) KeyBySHA256(_ context.Context, sum string) (*jobs.APIKey, error) {
	if sum != o.k.SHA256 {
		return nil, jobs.ErrNotFound
	}
	return o.k, nil
}

func (oneKey) TouchKey(context.Context, string) error { return nil }

// inFlight is a fakeRepo where key owner has n jobs in flight.
type inFlight struct {
	fakeRepo
	owner string
	n     int
}

func (f *inFlight) CountUnfinished(_ context.Context, owner string) (int, error) {
	if owner == f.owner {
		return f.n, nil
	}
	return 0, nil
}

// fixedLimiter allows everything and reports its rate.
type fixedLimiter struct{}

func (fixedLimiter) Allow(context.Context, string) (bool, time.Duration, error) { return true, 0, nil }
func (fixedLimiter) Limits() (float64, int)                                     { return 10, 20 }

func TestGetKey(t *testing.T) {
	t.Parallel()
	secret, k, err := jobs.NewAPIKey("ci")
	if err != nil {
		t.Fatal(err)
	}
	k.CreatedAt = time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	repo := &inFlight{owner: k.ID, n: 3}
	keyServer := func(auth bool) http.Handler {
		s := &Server{Service: &jobs.Service{Repo: repo, Queue: &fakeQueue{}, MaxInFlight: 500}, Batches: repo,
			Keys: oneKey{k}, Limiter: fixedLimiter{}, Config: Config{Auth: auth, AllowedHosts: testHosts}}
		return s.Handler()
	}
	v, err := contract.Load(OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		auth       bool
		header     string
		wantStatus int
		wantCode   string
	}{
		{name: "the calling key", auth: true, header: "Bearer " + secret, wantStatus: http.StatusOK},
		{name: "no key", auth: true, wantStatus: http.StatusUnauthorized, wantCode: "unauthorized"},
		{name: "a wrong key", auth: true, header: "Bearer sq_" + strings.Repeat("x", 43), wantStatus: http.StatusUnauthorized, wantCode: "unauthorized"},
		{name: "auth off", auth: false, wantStatus: http.StatusNotFound, wantCode: "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodGet, "/v1/key", nil)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			rec := httptest.NewRecorder()
			keyServer(tt.auth).ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.wantStatus, rec.Body)
			}
			if viol := v.Check(context.Background(), contract.Exchange{Request: req, Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}); viol != nil {
				t.Errorf("the answer drifts from web/openapi.json: %s", viol)
			}
			if tt.wantCode != "" {
				var e errBody
				if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code != tt.wantCode {
					t.Errorf("error %+v (%v), want code %s", e, err, tt.wantCode)
				}
				return
			}
			if strings.Contains(rec.Body.String(), secret) || strings.Contains(rec.Body.String(), k.SHA256) {
				t.Errorf("the answer shows the secret or its hash: %s", rec.Body)
			}
			var got keyInfo
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			want := keyInfo{ID: k.ID, Name: "ci", Prefix: k.Prefix, CreatedAt: k.CreatedAt, InFlightJobs: 3,
				Limits: keyLimits{RatePerSecond: 10, Burst: 20, MaxInFlightJobs: 500, MaxTargetsPerBatch: jobs.MaxTargets}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("GET /v1/key (-want +got):\n%s", diff)
			}
		})
	}
}
