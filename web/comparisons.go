package web

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/regression"
)

// GET /v1/runs/:id/comparisons: a run's comparisons a page at a time, so a
// run of thousands (the dashboard's run page) never loads them all at once.

const comparisonFilterKey = "snapq.comparison_filter"

// comparisonStatuses are the ?status values of GET /v1/runs/:id/comparisons.
var comparisonStatuses = []string{string(regression.ComparePassed), string(regression.CompareFailed), string(regression.CompareNew),
	string(regression.CompareMissing), string(regression.CompareError)}

// comparisonList answers GET /v1/runs/:id/comparisons.
type comparisonList struct {
	Comparisons []comparisonView `json:"comparisons"`
	NextCursor  *string          `json:"next_cursor"`
}

// readComparisonFilter is middleware that checks ?status (one status or a
// comma-separated list of them) and ?approved (true or false) and stores
// them under comparisonFilterKey.
func readComparisonFilter(c *gin.Context) error {
	var f regression.ComparisonFilter
	if v := c.Query("status"); v != "" {
		for _, st := range strings.Split(v, ",") {
			if !contains(comparisonStatuses, st) {
				return badRequest("invalid_query", "status", "must be one or more (comma-separated) of "+strings.Join(comparisonStatuses, ", "))
			}
			if !slices.Contains(f.Statuses, regression.CompareStatus(st)) {
				f.Statuses = append(f.Statuses, regression.CompareStatus(st))
			}
		}
	}
	switch v := c.Query("approved"); v {
	case "":
	case "true", "false":
		b := v == "true"
		f.Approved = &b
	default:
		return badRequest("invalid_query", "approved", "must be true or false")
	}
	c.Set(comparisonFilterKey, f)
	return nil
}

func (s *Server) listComparisons(c *gin.Context) error {
	r, err := loaded[*regression.Run](c, runKey)
	if err != nil {
		return err
	}
	q, err := loaded[listQueryParams](c, listKey)
	if err != nil {
		return err
	}
	f, err := loaded[regression.ComparisonFilter](c, comparisonFilterKey)
	if err != nil {
		return err
	}
	list, next, err := s.Suites.ListComparisons(c.Request.Context(), r.ID, f, q.limit, q.cursor)
	if err != nil {
		return fmt.Errorf("comparisons of run %s: %w", r.ID, err)
	}
	c.JSON(http.StatusOK, comparisonList{Comparisons: newComparisonViews(list, s.baseURL(c)), NextCursor: nullable(next)})
	return nil
}
