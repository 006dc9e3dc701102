package e2e

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/snapq/snapq/client"
)

// Issue 30: GET /v1/suites/:id/volatility through the Go client: a suite
// without runs has nothing volatile and suggests nothing; a bad threshold
// is a 400 naming the field. (The learning itself is tested over stored
// histories in regression's TestLearnVolatility.)
func TestSuiteVolatilityThroughClient(t *testing.T) {
	t.Parallel()
	s := sharedStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	site := httptest.NewServer(&changingSite{color: "#223344", blocks: 1})
	t.Cleanup(site.Close)
	c := s.goClient()
	suite, err := c.CreateSuite(ctx, client.SuiteInput{Name: "volatility", Targets: []client.SuiteTarget{{URL: site.URL + "/page", Name: "home"}}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.SuiteVolatility(ctx, suite.ID, client.VolatilityOptions{Runs: 20})
	if err != nil {
		t.Fatal(err)
	}
	if v.Runs != 0 || v.MinRuns != 5 || v.Threshold != 0.5 || len(v.Regions) != 0 || len(v.Suggestions) != 0 {
		t.Errorf("a suite without runs: %+v", v)
	}
	_, err = c.SuiteVolatility(ctx, suite.ID, client.VolatilityOptions{Threshold: 2})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Field != "threshold" {
		t.Errorf("threshold 2: %v, want 400 naming threshold", err)
	}
}
