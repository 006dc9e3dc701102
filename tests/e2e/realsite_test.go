package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/snapq/snapq/internal/fixtures"
)

// A staging site with a self-signed certificate: refused by default with a permanent
// certificate_error after one attempt (not retried), captured with ignore_https_errors.
// A URL on a port Chromium refuses is rejected at submit, naming the field.
func TestRealSiteCertificatesAndUnsafePorts(t *testing.T) {
	t.Parallel()
	tlsSite := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>staging</title><h1>self-signed staging site</h1>`)
	}))
	tlsSite.StartTLS() // on 127.0.0.1, with httptest's self-signed certificate
	t.Cleanup(tlsSite.Close)

	s := sharedStack(t) // SNAPQ_MAX_RETRY keeps its default (3): a retried failure would show attempts > 1

	var bad errResp
	if code := s.do("POST", "/v1/batches", map[string]any{"targets": []map[string]any{
		{"url": tlsSite.URL + "/"}, {"url": "http://127.0.0.3:1/"},
	}}, &bad); code != http.StatusBadRequest {
		t.Fatalf("unsafe port: status %d, want 400", code)
	}
	if len(bad.Error.Fields) != 1 || bad.Error.Fields[0].Field != "targets[1].url" {
		t.Fatalf("unsafe port: error %+v, want one field targets[1].url", bad.Error)
	}

	var b batchResp
	if code := s.do("POST", "/v1/batches", map[string]any{"targets": []map[string]any{
		{"url": tlsSite.URL + "/", "name": "strict"},
		{"url": tlsSite.URL + "/", "name": "staging", "options": map[string]any{"ignore_https_errors": true}},
	}}, &b); code != http.StatusAccepted {
		t.Fatalf("submit: status %d", code)
	}
	s.waitBatch(b.ID, 90*time.Second)
	for _, j := range b.Jobs {
		var got jobResp
		s.do("GET", "/v1/jobs/"+j.ID, nil, &got)
		switch j.Name {
		case "strict":
			if got.Status != "failed" || got.Error == nil || got.Error.Code != "certificate_error" || got.Attempts != 1 {
				t.Errorf("strict: status %s attempts %d error %+v, want failed certificate_error after 1 attempt", got.Status, got.Attempts, got.Error)
			}
		case "staging":
			if got.Status != "succeeded" || got.Result == nil || got.Result.Title != "staging" || got.Result.HTTPStatus != 200 {
				t.Errorf("staging: status %s error %+v result %+v, want succeeded with title staging", got.Status, got.Error, got.Result)
			}
		}
	}
}

// The real-site adaptations through the API: a consent banner hidden or accepted (reported in
// result.consent), an app shell's inner scroller cut into 9 segments, quality verdicts on a
// blank page and a spinner, a bot-check page failing with challenge_blocked after one
// attempt; and in a suite, each suspect or blocked capture is an error comparison while an
// ordinary page is new. Pixels are checked by capture's tests (TestConsentBanners, ...).
func TestRealSiteQualityAndConsent(t *testing.T) {
	t.Parallel()
	site := httptest.NewServer(fixtures.RealSite())
	t.Cleanup(site.Close)
	s := sharedStack(t)
	fast := map[string]any{"retry_wait_ms": 1000, "challenge_wait_ms": 1000}

	var b batchResp
	if code := s.do("POST", "/v1/batches", map[string]any{
		"options": map[string]any{"quality": fast, "screenshot": map[string]any{"mode": "viewport"}},
		"targets": []map[string]any{
			{"url": site.URL + "/consent/onetrust", "name": "hide", "options": map[string]any{"prepare": map[string]any{"consent": "hide"}}},
			{"url": site.URL + "/consent/cookiebot", "name": "accept", "options": map[string]any{"prepare": map[string]any{"consent": "accept"}}},
			{"url": site.URL + "/appshell", "name": "shell", "options": map[string]any{"screenshot": map[string]any{"mode": "segments"}}},
			{"url": site.URL + "/quality/blank", "name": "blank"},
			{"url": site.URL + "/quality/spinner", "name": "spinner"},
			{"url": site.URL + "/quality/challenge", "name": "challenge"},
		}}, &b); code != http.StatusAccepted {
		t.Fatalf("submit: status %d", code)
	}
	s.waitBatch(b.ID, 2*time.Minute)
	type result struct {
		Title    string `json:"title"`
		Segments struct {
			Total int `json:"total"`
		} `json:"segments"`
		Quality *struct {
			Verdict string   `json:"verdict"`
			Reasons []string `json:"reasons"`
			Retried bool     `json:"retried"`
		} `json:"quality"`
		Consent []struct {
			Platform string `json:"platform"`
			Action   string `json:"action"`
		} `json:"consent"`
	}
	for _, j := range b.Jobs {
		var got struct {
			Status   string `json:"status"`
			Attempts int    `json:"attempts"`
			Error    *struct {
				Code string `json:"code"`
			} `json:"error"`
			Result *result `json:"result"`
		}
		s.do("GET", "/v1/jobs/"+j.ID, nil, &got)
		if j.Name == "challenge" {
			if got.Status != "failed" || got.Error == nil || got.Error.Code != "challenge_blocked" || got.Attempts != 1 {
				t.Errorf("challenge: %s, %d attempts, error %+v; want failed challenge_blocked after 1 attempt", got.Status, got.Attempts, got.Error)
			}
			continue
		}
		r := got.Result
		if got.Status != "succeeded" || r == nil || r.Quality == nil {
			t.Errorf("%s: %s %+v, want succeeded with a quality verdict", j.Name, got.Status, got.Error)
			continue
		}
		verdict, reasons := r.Quality.Verdict, fmt.Sprint(r.Quality.Reasons)
		switch j.Name {
		case "hide", "accept":
			action := map[string]string{"hide": "hidden", "accept": "accepted"}[j.Name]
			if len(r.Consent) != 1 || r.Consent[0].Action != action || verdict != "ok" {
				t.Errorf("%s: consent %+v quality %s %s; want one banner %s, ok", j.Name, r.Consent, verdict, reasons, action)
			}
			if (r.Title == "accepted") != (j.Name == "accept") {
				t.Errorf("%s: title %q (the fixture sets \"accepted\" when its accept button is clicked)", j.Name, r.Title)
			}
		case "shell":
			if r.Segments.Total != 9 || verdict != "ok" {
				t.Errorf("shell: %d segments, quality %s %s; want 9, ok", r.Segments.Total, verdict, reasons)
			}
		case "blank", "spinner":
			want := map[string]string{"blank": "[blank]", "spinner": "[loading_indicator]"}[j.Name]
			if verdict != "suspect" || reasons != want || !r.Quality.Retried {
				t.Errorf("%s: quality %+v, want suspect %s after a retry", j.Name, r.Quality, want)
			}
		}
	}

	var suite struct {
		ID string `json:"id"`
	}
	if code := s.do("POST", "/v1/suites", map[string]any{
		"name":    "real",
		"options": map[string]any{"quality": fast},
		"targets": []map[string]any{
			{"url": site.URL + "/quality/ok", "name": "ok"},
			{"url": site.URL + "/quality/blank", "name": "blank"},
			{"url": site.URL + "/quality/spinner", "name": "spinner"},
			{"url": site.URL + "/quality/challenge", "name": "challenge"},
		},
	}, &suite); code != http.StatusCreated {
		t.Fatalf("create suite: status %d", code)
	}
	run := s.waitRun(s.startRun(suite.ID), 2*time.Minute)
	got := map[string]string{}
	for _, c := range run.Comparisons {
		got[c.Target] = c.Status
		if c.Status == "error" && c.Message == "" {
			t.Errorf("%s: error comparison without a message", c.Target)
		}
	}
	want := map[string]string{"ok": "new", "blank": "error", "spinner": "error", "challenge": "error"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("comparisons %v, want %v (%s)", got, want, statuses(run))
	}
}
