package web

import (
	"cmp"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

// keyInfo answers GET /v1/key: the calling key, never its secret, with the
// limits it works under and its jobs in flight.
type keyInfo struct {
	ID           string     `json:"id"`
	Name         string     `json:"name"`
	Prefix       string     `json:"prefix"`
	CreatedAt    time.Time  `json:"created_at"`
	LastUsedAt   *time.Time `json:"last_used_at"`
	Limits       keyLimits  `json:"limits"`
	InFlightJobs int        `json:"in_flight_jobs"`
}

// keyLimits are the api's limits, the same for every key; 0 is "no limit"
// where a limit can be off.
type keyLimits struct {
	RatePerSecond      float64 `json:"rate_per_second"`
	Burst              int     `json:"burst"`
	MaxInFlightJobs    int     `json:"max_in_flight_jobs"`
	MaxTargetsPerBatch int     `json:"max_targets_per_batch"`
	MaxSuites          int     `json:"max_suites"`
}

// limitsReporter is a RateLimiter that tells its rate; ratelimit.Limiter is one.
type limitsReporter interface {
	Limits() (rate float64, burst int)
}

// getKey answers GET /v1/key from the key authenticate stored. Without auth
// requests carry no key: 404.
func (s *Server) getKey(c *gin.Context) error {
	k, ok := c.Value(callerKeyKey).(*jobs.APIKey)
	if !ok {
		return &apiError{Status: http.StatusNotFound, Code: "not_found",
			Message: "this api runs without API keys (SNAPQ_AUTH=off): there is no calling key"}
	}
	n, err := s.Service.Repo.CountUnfinished(c.Request.Context(), k.ID)
	if err != nil {
		return fmt.Errorf("jobs in flight of key %s: %w", k.Prefix, err)
	}
	c.JSON(http.StatusOK, keyInfo{ID: k.ID, Name: k.Name, Prefix: k.Prefix, CreatedAt: k.CreatedAt,
		LastUsedAt: k.LastUsedAt, Limits: s.keyLimits(), InFlightJobs: n})
	return nil
}

func (s *Server) keyLimits() keyLimits {
	var l keyLimits
	if lr, ok := s.Limiter.(limitsReporter); ok {
		l.RatePerSecond, l.Burst = lr.Limits()
	}
	l.MaxInFlightJobs = max(s.Service.MaxInFlight, 0)
	l.MaxTargetsPerBatch = cmp.Or(s.Service.MaxTargets, jobs.MaxTargets)
	if s.Regression != nil {
		l.MaxSuites = max(cmp.Or(s.Regression.MaxSuitesPerKey, regression.DefaultMaxSuitesPerKey), 0)
	}
	return l
}
