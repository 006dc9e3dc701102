package web

import (
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

// Changes explained by elements and the suite rules made from them
// (regression/changes.go, rules.go).

func (s *Server) routeRules(v1 *gin.RouterGroup) {
	jsonBody := s.h(s.readJSON("the rule"))
	v1.GET("/comparisons/:id/changes", s.h(s.comparisonChanges))
	v1.POST("/suites/:id/rules", jsonBody, s.loadSuite, s.h(s.createRule))
	v1.GET("/suites/:id/rules", s.loadSuite, s.h(s.listRules))
	v1.POST("/suites/:id/rules/preview", jsonBody, s.loadSuite, s.spend(jobs.WorkPreview), s.h(s.previewRule))
	v1.DELETE("/rules/:id", s.h(s.deleteRule))
}

// rules is the rule store, or a not-found error when the server has none.
func (s *Server) rules() (regression.RuleStore, error) {
	if s.Rules == nil {
		return nil, fmt.Errorf("rules: %w", jobs.ErrNotFound)
	}
	return s.Rules, nil
}

// changesView is GET /v1/comparisons/:id/changes.
type changesView struct {
	ComparisonID string                   `json:"comparison_id"`
	RunID        string                   `json:"run_id"`
	SuiteID      string                   `json:"suite_id"`
	Target       string                   `json:"target"`
	Viewport     string                   `json:"viewport"`
	Checkpoint   string                   `json:"checkpoint,omitempty"`
	Segment      int                      `json:"segment"`
	Status       regression.CompareStatus `json:"status"`
	Changes      []regression.Change      `json:"changes"`
}

func (s *Server) comparisonChanges(c *gin.Context) error {
	st, err := s.rules()
	if err != nil {
		return err
	}
	id, err := pathID(c)
	if err != nil {
		return err
	}
	cmp, err := st.ComparisonChanges(c.Request.Context(), id)
	if err != nil {
		return fmt.Errorf("comparison %s: %w", id, err)
	}
	run, err := s.ownedRun(c, cmp.RunID)
	if err != nil {
		return fmt.Errorf("comparison %s: %w", id, jobs.ErrNotFound)
	}
	if cmp.Changes == nil {
		cmp.Changes = []regression.Change{}
	}
	c.JSON(http.StatusOK, changesView{ComparisonID: cmp.ID, RunID: cmp.RunID, SuiteID: run.SuiteID, Target: cmp.Target, Viewport: cmp.Viewport,
		Checkpoint: cmp.Checkpoint, Segment: cmp.Segment, Status: cmp.Status, Changes: cmp.Changes})
	return nil
}

// ruleView is a rule as the API shows it.
type ruleView struct {
	*regression.Rule
	Active bool `json:"active"`
}

func (s *Server) createRule(c *gin.Context) error {
	st, err := s.rules()
	if err != nil {
		return err
	}
	su, err := loaded[*regression.Suite](c, suiteKey)
	if err != nil {
		return err
	}
	body, err := loaded[[]byte](c, bodyKey)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	r, err := regression.ParseRule(su, body, now)
	if err != nil {
		return err
	}
	if err := st.CreateRule(c.Request.Context(), r); err != nil {
		return err
	}
	c.Header("Location", "/v1/suites/"+su.ID+"/rules")
	c.JSON(http.StatusCreated, ruleView{Rule: r, Active: r.ExpiresAt == nil || now.Before(*r.ExpiresAt)})
	return nil
}

// ruleList is GET /v1/suites/:id/rules.
type ruleList struct {
	Rules []ruleView `json:"rules"`
	// Runs is how many of the suite's last runs the suppressed counts cover.
	Runs int `json:"runs"`
}

func (s *Server) listRules(c *gin.Context) error {
	st, err := s.rules()
	if err != nil {
		return err
	}
	su, err := loaded[*regression.Suite](c, suiteKey)
	if err != nil {
		return err
	}
	ctx := c.Request.Context()
	rules, err := st.ListRules(ctx, su.ID)
	if err != nil {
		return err
	}
	counts, err := st.SuppressedCounts(ctx, su.ID, regression.RuleStatsRuns)
	if err != nil {
		return err
	}
	now := time.Now()
	out := ruleList{Rules: make([]ruleView, len(rules)), Runs: regression.RuleStatsRuns}
	for i, r := range rules {
		r.Suppressed = counts[r.ID]
		out.Rules[i] = ruleView{Rule: r, Active: r.ExpiresAt == nil || now.Before(*r.ExpiresAt)}
	}
	c.JSON(http.StatusOK, out)
	return nil
}

func (s *Server) previewRule(c *gin.Context) error {
	st, err := s.rules()
	if err != nil {
		return err
	}
	su, err := loaded[*regression.Suite](c, suiteKey)
	if err != nil {
		return err
	}
	body, err := loaded[[]byte](c, bodyKey)
	if err != nil {
		return err
	}
	r, err := regression.ParseRule(su, body, time.Now().UTC())
	if err != nil {
		return err
	}
	p, err := regression.PreviewRule(c.Request.Context(), st, r)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, p)
	return nil
}

func (s *Server) deleteRule(c *gin.Context) error {
	st, err := s.rules()
	if err != nil {
		return err
	}
	id, err := pathID(c)
	if err != nil {
		return err
	}
	ctx := c.Request.Context()
	r, err := st.GetRule(ctx, id)
	if err != nil {
		return fmt.Errorf("rule %s: %w", id, err)
	}
	if _, err := s.ownedSuite(c, r.SuiteID); err != nil {
		return fmt.Errorf("rule %s: %w", id, jobs.ErrNotFound)
	}
	if err := st.DeleteRule(ctx, id); err != nil {
		return fmt.Errorf("rule %s: %w", id, err)
	}
	c.Status(http.StatusNoContent)
	return nil
}
