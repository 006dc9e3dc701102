package web

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

// GET /v1/suites/:id/volatility: where the suite's pages change by
// themselves over its last runs, and the rules that would quiet them
// (regression/volatility.go). It previews each suggestion, so it passes
// the key's budget as a rule preview does.

func (s *Server) routeVolatility(v1 *gin.RouterGroup) {
	v1.GET("/suites/:id/volatility", s.loadSuite, s.spend(jobs.WorkPreview), s.h(s.suiteVolatility))
}

func (s *Server) suiteVolatility(c *gin.Context) error {
	st, err := s.rules()
	if err != nil {
		return err
	}
	su, err := loaded[*regression.Suite](c, suiteKey)
	if err != nil {
		return err
	}
	// The suite's own min_runs and threshold, unless the query says otherwise.
	set := su.Spec.VolatilityOf()
	q := regression.VolatilityQuery{MinRuns: set.MinRuns, Threshold: set.Threshold}
	if set.MinRuns > regression.DefaultVolatilityRuns {
		q.Runs = set.MinRuns
	}
	for _, p := range []struct {
		name string
		dst  *int
	}{{"runs", &q.Runs}, {"min_runs", &q.MinRuns}} {
		if v := c.Query(p.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return badRequest("invalid_query", p.name, "must be a whole number of at least 1")
			}
			*p.dst = n
		}
	}
	if v := c.Query("threshold"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0 && f <= 1) {
			return badRequest("invalid_query", "threshold", "must be a share above 0 and at most 1")
		}
		q.Threshold = f
	}
	v, err := regression.LearnVolatility(c.Request.Context(), st, su, q)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, v)
	return nil
}
