package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// A failing readiness check tells anonymous callers only that it failed.
func TestReadyHidesErrors(t *testing.T) {
	t.Parallel()
	s := &Server{Checks: []Check{
		{Name: "postgres", Ping: func(context.Context) error {
			return errors.New("dial tcp 10.1.2.3:5432: password authentication failed for user snapq")
		}},
		{Name: "redis", Ping: func(context.Context) error { return nil }},
	}}
	rec := get(s.Handler(), "/readyz", func(r *http.Request) { r.Host = "127.0.0.1:8080" })
	var out readyResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 503 || out.Status != "unavailable" || out.Checks["postgres"] != "unavailable" || out.Checks["redis"] != "ok" {
		t.Errorf("GET /readyz = %d %s", rec.Code, rec.Body)
	}
	if body := rec.Body.String(); strings.Contains(body, "10.1.2.3") || strings.Contains(body, "password") {
		t.Errorf("GET /readyz leaks the error: %s", body)
	}
}
