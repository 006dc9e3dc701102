package web

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/jobs"
)

// The per-key work budget at the edge (jobs.WorkBudget, ratelimit.Budget): rule
// previews, auth tests, archives and event streams take a slot of their kind for the
// caller's key before their work starts and give it back when the answer is written.
// Sitemap reads and discovery crawls take theirs in the services (jobs, regression),
// where it is known that a request reads one, after the in-flight check.

// budgetRefusal is a refused WorkBudget.Acquire (ratelimit.BudgetError).
type budgetRefusal interface {
	error
	BudgetRefusal() (kind, scope string, limit int, retryAfter time.Duration)
}

// Codes of budget refusals (429).
const (
	codeConcurrencyLimit = "concurrency_limit" // the key runs its share of this kind of work
	codeServerBusy       = "server_busy"       // this replica runs its share, all keys
)

// budgetError is the 429 of a refusal: Retry-After in whole seconds.
func budgetError(r budgetRefusal) *apiError {
	_, scope, _, retry := r.BudgetRefusal()
	code := codeConcurrencyLimit
	if scope == "replica" {
		code = codeServerBusy
	}
	secs := max(1, int(math.Ceil(retry.Seconds())))
	return &apiError{Status: http.StatusTooManyRequests, Code: code, Message: r.Error(),
		Header: http.Header{"Retry-After": {strconv.Itoa(secs)}}}
}

// spend is a route's middleware that takes a slot of kind for the caller's key before
// the handlers after it run, and gives it back when they return.
func (s *Server) spend(kind string) gin.HandlerFunc {
	return s.h(func(c *gin.Context) error {
		release, err := s.acquire(c, kind)
		if err != nil {
			return err
		}
		defer release()
		c.Next()
		return nil
	})
}

// acquire takes a slot of kind for the caller's key (no Budget: always).
func (s *Server) acquire(c *gin.Context, kind string) (func(), error) {
	return jobs.AcquireWork(c.Request.Context(), s.Budget, owner(c), kind)
}
