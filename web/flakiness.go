package web

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/regression"
)

// GET /v1/suites/:id/flakiness: each target's history over the suite's
// newest finished runs and its flake score, flakiest first.

type flakinessView struct {
	SuiteID string `json:"suite_id"`
	// Branch is null for the suite's main branch.
	Branch  *string               `json:"branch"`
	Runs    int                   `json:"runs"`
	Targets []targetFlakinessView `json:"targets"`
}

type targetFlakinessView struct {
	Target     string          `json:"target"`
	FlakeScore float64         `json:"flake_score"`
	Flips      int             `json:"flips"`
	History    []targetRunView `json:"history"`
}

type targetRunView struct {
	RunID        string                   `json:"run_id"`
	CreatedAt    time.Time                `json:"created_at"`
	Status       regression.CompareStatus `json:"status"`
	MaxDiffRatio float64                  `json:"max_diff_ratio"`
	Approved     bool                     `json:"approved"`
}

func (s *Server) suiteFlakiness(c *gin.Context) error {
	su, err := loaded[*regression.Suite](c, suiteKey)
	if err != nil {
		return err
	}
	runs := regression.DefaultFlakinessRuns
	if v := c.Query("runs"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 || n > regression.MaxFlakinessRuns {
			return badRequest("invalid_query", "runs", "must be a whole number from 2 to "+itoa(regression.MaxFlakinessRuns))
		}
		runs = n
	}
	limit := 0 // every target
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPageSize {
			return badRequest("invalid_query", "limit", "must be a whole number from 1 to "+itoa(maxPageSize))
		}
		limit = n
	}
	branch, branchName := regression.MainLine, (*string)(nil)
	if b := c.Query("branch"); b != "" {
		if err := regression.CheckBranchName(b, "branch"); err != nil {
			return err
		}
		branch = regression.BranchKey(b, su.Spec.MainBranchOf())
		if branch != regression.MainLine {
			branchName = &b
		}
	}
	hist, err := s.Suites.TargetHistory(c.Request.Context(), su.ID, branch, runs)
	if err != nil {
		return fmt.Errorf("flakiness of suite %s: %w", su.ID, err)
	}
	scored := regression.Flakiness(hist)
	if limit > 0 && len(scored) > limit {
		scored = scored[:limit]
	}
	out := flakinessView{SuiteID: su.ID, Branch: branchName, Runs: runs, Targets: make([]targetFlakinessView, len(scored))}
	for i, f := range scored {
		v := targetFlakinessView{Target: f.Target, FlakeScore: f.Score, Flips: f.Flips, History: make([]targetRunView, len(f.Runs))}
		for k, r := range f.Runs {
			v.History[k] = targetRunView{RunID: r.RunID, CreatedAt: r.CreatedAt, Status: r.Status, MaxDiffRatio: r.MaxRatio, Approved: r.Approved}
		}
		out.Targets[i] = v
	}
	c.JSON(http.StatusOK, out)
	return nil
}
