package web

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

// Visual regression endpoints: suites, runs, approval, baselines.

func (s *Server) routeSuites(v1 *gin.RouterGroup) {
	jsonBody := s.h(s.readJSON("the body"))
	v1.POST("/suites", jsonBody, s.h(s.createSuite))
	v1.GET("/suites", s.h(listQuery(nil)), s.h(s.listSuites))
	v1.GET("/suites/:id", s.loadSuite, s.h(s.getSuite))
	v1.PATCH("/suites/:id", jsonBody, s.loadSuite, s.h(s.updateSuite))
	v1.DELETE("/suites/:id", s.loadSuite, s.h(s.deleteSuite))
	v1.POST("/suites/:id/runs", jsonBody, s.loadSuite, s.h(s.startRun))
	v1.POST("/suites/:id/branches/:branch/merge", jsonBody, s.loadSuite, s.h(s.mergeBranch))
	v1.GET("/suites/:id/runs", s.h(listQuery(nil)), s.loadSuite, s.h(s.listRuns))
	v1.GET("/suites/:id/baselines", s.loadSuite, s.h(s.listBaselines))
	v1.GET("/suites/:id/flakiness", s.loadSuite, s.h(s.suiteFlakiness)) // flakiness.go
	v1.GET("/runs/:id", s.loadRun, s.h(s.getRun))
	v1.GET("/runs/:id/events", s.loadRun, s.h(s.runEvents))                              // events.go
	v1.GET("/runs/:id/archive", s.loadRun, s.spend(jobs.WorkArchive), s.h(s.runArchive)) // archive.go
	v1.POST("/runs/:id/approve", jsonBody, s.h(readApproval), s.loadRun, s.h(s.approveRun))
	v1.POST("/baselines/:id/restore", s.loadBaseline, s.h(s.restoreBaseline))
	// comparisons.go
	v1.GET("/runs/:id/comparisons", s.h(listQuery(nil)), s.h(readComparisonFilter), s.loadRun, s.h(s.listComparisons))
}

func (s *Server) createSuite(c *gin.Context) error {
	body, err := loaded[[]byte](c, bodyKey)
	if err != nil {
		return err
	}
	su, err := s.Regression.CreateSuite(c.Request.Context(), owner(c), body)
	if err != nil {
		return err
	}
	c.Header("Location", "/v1/suites/"+su.ID)
	c.JSON(http.StatusCreated, newSuiteView(su))
	return nil
}

func (s *Server) listSuites(c *gin.Context) error {
	q, err := loaded[listQueryParams](c, listKey)
	if err != nil {
		return err
	}
	list, next, err := s.Suites.ListSuites(c.Request.Context(), s.listOwner(c), q.limit, q.cursor)
	if err != nil {
		return fmt.Errorf("list suites: %w", err)
	}
	out := suiteList{Suites: make([]suiteView, len(list)), NextCursor: nullable(next)}
	for i, su := range list {
		out.Suites[i] = newSuiteView(su)
	}
	c.JSON(http.StatusOK, out)
	return nil
}

func (s *Server) getSuite(c *gin.Context) error {
	su, err := loaded[*regression.Suite](c, suiteKey)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, newSuiteView(su))
	return nil
}

func (s *Server) updateSuite(c *gin.Context) error {
	cur, err := loaded[*regression.Suite](c, suiteKey)
	if err != nil {
		return err
	}
	body, err := loaded[[]byte](c, bodyKey)
	if err != nil {
		return err
	}
	su, err := s.Regression.UpdateSuite(c.Request.Context(), cur, body)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, newSuiteView(su))
	return nil
}

func (s *Server) deleteSuite(c *gin.Context) error {
	su, err := loaded[*regression.Suite](c, suiteKey)
	if err != nil {
		return err
	}
	if err := s.Suites.DeleteSuite(c.Request.Context(), su.ID); err != nil {
		return fmt.Errorf("suite %s: %w", su.ID, err)
	}
	c.Status(http.StatusNoContent)
	return nil
}

func (s *Server) startRun(c *gin.Context) error {
	su, err := loaded[*regression.Suite](c, suiteKey)
	if err != nil {
		return err
	}
	body, err := loaded[[]byte](c, bodyKey)
	if err != nil {
		return err
	}
	opts, err := regression.ParseRunOptions(body)
	if err != nil {
		return err
	}
	opts.DashboardURL = s.baseURL(c)
	r, err := s.Regression.StartRun(c.Request.Context(), su, regression.TriggerManual, nil, opts)
	if err != nil {
		return err
	}
	c.Header("Location", "/v1/runs/"+r.ID)
	c.JSON(http.StatusAccepted, newRunView(r, s.baseURL(c)))
	return nil
}

func (s *Server) listRuns(c *gin.Context) error {
	su, err := loaded[*regression.Suite](c, suiteKey)
	if err != nil {
		return err
	}
	q, err := loaded[listQueryParams](c, listKey)
	if err != nil {
		return err
	}
	runs, next, err := s.Suites.ListRuns(c.Request.Context(), su.ID, q.limit, q.cursor)
	if err != nil {
		return fmt.Errorf("list runs of suite %s: %w", su.ID, err)
	}
	base := s.baseURL(c)
	out := runList{Runs: make([]runView, len(runs)), NextCursor: nullable(next)}
	for i, r := range runs {
		out.Runs[i] = newRunView(r, base)
	}
	c.JSON(http.StatusOK, out)
	return nil
}

func (s *Server) getRun(c *gin.Context) error {
	r, err := loaded[*regression.Run](c, runKey)
	if err != nil {
		return err
	}
	return s.writeRun(c, r)
}

// writeRun answers with the run; with its comparisons and notifications
// unless ?comparisons=false (a run of thousands: GET
// /v1/runs/:id/comparisons pages them).
func (s *Server) writeRun(c *gin.Context, r *regression.Run) error {
	switch c.Query("comparisons") {
	case "false":
	case "", "true":
		full, err := s.Suites.GetRun(c.Request.Context(), r.ID)
		if err != nil {
			return fmt.Errorf("run %s: %w", r.ID, err)
		}
		r = full
	default:
		return badRequest("invalid_query", "comparisons", "must be true or false")
	}
	c.JSON(http.StatusOK, newRunView(r, s.baseURL(c)))
	return nil
}

// readApproval is middleware that parses the body readJSON read as an
// approval, for approveRun.
func readApproval(c *gin.Context) error {
	body, err := loaded[[]byte](c, bodyKey)
	if err != nil {
		return err
	}
	a, err := parseApproval(body)
	if err != nil {
		return err
	}
	c.Set(approvalKey, a)
	return nil
}

func (s *Server) approveRun(c *gin.Context) error {
	a, err := loaded[regression.Approval](c, approvalKey)
	if err != nil {
		return err
	}
	r, err := loaded[*regression.Run](c, runKey)
	if err != nil {
		return err
	}
	id := r.ID
	r, err = s.Suites.Approve(c.Request.Context(), id, a, approver(c))
	if err != nil {
		return fmt.Errorf("run %s: %w", id, err)
	}
	// An approval flips the run's commit status (and edits its comment).
	if s.Regression.ReportApproved != nil {
		s.Regression.ReportApproved(c.Request.Context(), r)
	}
	return s.writeRun(c, r)
}

// approvable are the statuses {"status": [...]} approves.
var approvable = []string{string(regression.CompareFailed), string(regression.CompareNew), string(regression.CompareMissing)}

// parseApproval accepts exactly one of {"all": true}, {"targets": [...]},
// {"comparisons": [...]}, {"status": [...]}.
func parseApproval(body []byte) (regression.Approval, error) {
	var a regression.Approval
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return a, badRequest("invalid_json", "",
			"send {\"all\": true}, {\"targets\": [names]}, {\"comparisons\": [ids]} or {\"status\": [statuses]}: "+err.Error())
	}
	given := 0
	if a.All {
		given++
	}
	if len(a.Targets) > 0 {
		given++
	}
	if len(a.Comparisons) > 0 {
		given++
	}
	if len(a.Statuses) > 0 {
		given++
	}
	if given != 1 {
		return a, badRequest("invalid_approval", "",
			"give exactly one of all (true), targets (names), comparisons (ids) or status (failed, new, missing)")
	}
	for i, st := range a.Statuses {
		if !contains(approvable, string(st)) {
			return a, badRequest("invalid_option", fmt.Sprintf("status[%d]", i), "must be one of "+strings.Join(approvable, ", "))
		}
	}
	for i, id := range a.Comparisons {
		if !jobs.ValidID(id) {
			return a, badRequest("invalid_id", fmt.Sprintf("comparisons[%d]", i), "is not a comparison id")
		}
	}
	return a, nil
}

// approver names who approved, for the baseline history.
func approver(c *gin.Context) string {
	if k := owner(c); k != "" {
		return "key:" + k
	}
	return "anonymous"
}

func (s *Server) listBaselines(c *gin.Context) error {
	su, err := loaded[*regression.Suite](c, suiteKey)
	if err != nil {
		return err
	}
	history := c.Query("history") == "true"
	branch := regression.MainLine
	if b := c.Query("branch"); b != "" {
		if err := regression.CheckBranchName(b, "branch"); err != nil {
			return err
		}
		branch = regression.BranchKey(b, su.Spec.MainBranchOf())
	}
	bs, err := s.Suites.ListBaselines(c.Request.Context(), su.ID, branch, history)
	if err != nil {
		return fmt.Errorf("list baselines of suite %s: %w", su.ID, err)
	}
	base := s.baseURL(c)
	out := baselineList{Baselines: make([]baselineView, len(bs))}
	for i, b := range bs {
		out.Baselines[i] = newBaselineView(b, base)
	}
	c.JSON(http.StatusOK, out)
	return nil
}

func (s *Server) restoreBaseline(c *gin.Context) error {
	b, err := loaded[*regression.Baseline](c, baselineKey)
	if err != nil {
		return err
	}
	if b.Artifact == nil {
		return fmt.Errorf("%w: baseline version %d removed its segment; restore a version with an image", jobs.ErrConflict, b.Version)
	}
	// Not wrapped: the message of a not-found or conflict error is the answer's.
	nb, err := s.Suites.RestoreBaseline(c.Request.Context(), b.ID, approver(c))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, newBaselineView(nb, s.baseURL(c)))
	return nil
}

// mergeInput is the optional body of POST /v1/suites/:id/branches/:branch/merge.
type mergeInput struct {
	BaseBranch string `json:"base_branch"`
}

type mergeView struct {
	Branch     string `json:"branch"`
	BaseBranch string `json:"base_branch"`
	Promoted   int    `json:"promoted"`
}

// mergeBranch promotes a branch's approved baselines to its base branch
// (the suite's main branch unless the body names another) and removes them
// from the branch: what a CI step calls when the pull request merges.
func (s *Server) mergeBranch(c *gin.Context) error {
	su, err := loaded[*regression.Suite](c, suiteKey)
	if err != nil {
		return err
	}
	body, err := loaded[[]byte](c, bodyKey)
	if err != nil {
		return err
	}
	var in mergeInput
	if len(bytes.TrimSpace(body)) > 0 {
		var errs jobs.FieldErrors
		if !jobs.DecodeStrict(body, &in, "", &errs) || len(errs) > 0 {
			return jobs.ValidationErrors(errs)
		}
	}
	main := su.Spec.MainBranchOf()
	branch := c.Param("branch")
	if err := regression.CheckBranchName(branch, "branch"); err != nil {
		return err
	}
	if branch == main {
		return badRequest("invalid_option", "branch", fmt.Sprintf("%q is the suite's main branch; merge a branch into it", branch))
	}
	base := cmp.Or(in.BaseBranch, main)
	if err := regression.CheckBranchName(base, "base_branch"); err != nil {
		return err
	}
	if base == branch {
		return badRequest("invalid_option", "base_branch", "a branch cannot be merged into itself")
	}
	n, err := s.Suites.MergeBranch(c.Request.Context(), su.ID, branch, regression.BranchKey(base, main), approver(c))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, mergeView{Branch: branch, BaseBranch: base, Promoted: n})
	return nil
}
