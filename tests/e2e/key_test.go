package e2e

import (
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// GET /v1/key shows the calling key, its limits and its jobs in flight, and
// never the secret.
func TestKeyInfo(t *testing.T) {
	t.Parallel()
	s := startStack(t, "SNAPQ_AUTH=on", "SNAPQ_RATE_LIMIT=5", "SNAPQ_RATE_BURST=50",
		"SNAPQ_MAX_JOBS_IN_FLIGHT=100", "SNAPQ_MAX_TARGETS=40")
	s.stop("worker", syscall.SIGTERM) // the jobs stay queued: in flight
	key := s.apiKey("ci-nightly")
	auth := map[string]string{"Authorization": "Bearer " + key}
	site := fixtureSite(t)

	var b batchResp
	urls := []string{site + "/short?a", site + "/short?b", site + "/short?c"}
	if code, _ := s.doWith("POST", "/v1/batches", auth, map[string]any{"urls": urls}, &b); code != http.StatusAccepted {
		t.Fatalf("submit: %d", code)
	}
	var info struct {
		ID         string     `json:"id"`
		Name       string     `json:"name"`
		Prefix     string     `json:"prefix"`
		CreatedAt  time.Time  `json:"created_at"`
		LastUsedAt *time.Time `json:"last_used_at"`
		Limits     struct {
			RatePerSecond      float64 `json:"rate_per_second"`
			Burst              int     `json:"burst"`
			MaxInFlightJobs    int     `json:"max_in_flight_jobs"`
			MaxTargetsPerBatch int     `json:"max_targets_per_batch"`
		} `json:"limits"`
		InFlightJobs int `json:"in_flight_jobs"`
	}
	code, _ := s.doWith("GET", "/v1/key", auth, nil, &info)
	if code != http.StatusOK {
		t.Fatalf("GET /v1/key: %d", code)
	}
	if info.Name != "ci-nightly" || info.ID == "" || info.Prefix == "" || !strings.HasPrefix(key, info.Prefix) || info.Prefix == key {
		t.Errorf("key %+v: want name ci-nightly and a prefix of the secret", info)
	}
	if info.CreatedAt.IsZero() || info.LastUsedAt == nil {
		t.Errorf("created_at %v, last_used_at %v: want both set", info.CreatedAt, info.LastUsedAt)
	}
	l := info.Limits
	if l.RatePerSecond != 5 || l.Burst != 50 || l.MaxInFlightJobs != 100 || l.MaxTargetsPerBatch != 40 {
		t.Errorf("limits %+v, want the api's settings (5/s, burst 50, 100 in flight, 40 targets)", l)
	}
	if info.InFlightJobs != len(urls) {
		t.Errorf("in_flight_jobs %d, want %d queued", info.InFlightJobs, len(urls))
	}

	var e errResp
	if code, _ := s.doWith("GET", "/v1/key", nil, nil, &e); code != http.StatusUnauthorized || e.Error.Code != "unauthorized" {
		t.Errorf("without a key: %d %+v", code, e.Error)
	}
}
