package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

// Visual regression endpoints: suites, runs, approval, baselines.

func (s *Server) routeSuites(v1 *gin.RouterGroup) {
	v1.POST("/suites", s.createSuite)
	v1.GET("/suites", s.listSuites)
	v1.GET("/suites/:id", s.getSuite)
	v1.PATCH("/suites/:id", s.updateSuite)
	v1.DELETE("/suites/:id", s.deleteSuite)
	v1.POST("/suites/:id/runs", s.startRun)
	v1.GET("/suites/:id/runs", s.listRuns)
	v1.GET("/suites/:id/baselines", s.listBaselines)
	v1.GET("/runs/:id", s.getRun)
	v1.POST("/runs/:id/approve", s.approveRun)
	v1.POST("/baselines/:id/restore", s.restoreBaseline)
}

// jsonBody reads a JSON request body within the size limit; what names it in
// the error for another media type ("the batch").
func (s *Server) jsonBody(c *gin.Context, what string) ([]byte, bool) {
	if ct := c.ContentType(); ct != "" && ct != "application/json" {
		c.AbortWithStatusJSON(http.StatusUnsupportedMediaType, gin.H{"error": apiError{Code: "unsupported_media_type",
			Message: "send " + what + " as application/json"}})
		return nil, false
	}
	body, err := readBody(c.Request.Body, s.maxBody())
	if err != nil {
		writeError(c, err)
		return nil, false
	}
	return body, true
}

// suite loads a suite the caller may see; otherwise it answers 404.
func (s *Server) suite(c *gin.Context, id string) (*regression.Suite, bool) {
	su, err := s.Repo.GetSuite(c.Request.Context(), id)
	if err == nil && s.Config.Auth && su.OwnerKeyID != owner(c) {
		err = jobs.ErrNotFound
	}
	if err != nil {
		writeError(c, fmt.Errorf("suite %s: %w", id, err))
		return nil, false
	}
	return su, true
}

// run loads a run whose suite the caller may see.
func (s *Server) run(c *gin.Context, id string) (*regression.Run, bool) {
	r, err := s.Repo.GetRun(c.Request.Context(), id)
	if err != nil {
		writeError(c, fmt.Errorf("run %s: %w", id, err))
		return nil, false
	}
	if _, ok := s.suite(c, r.SuiteID); !ok {
		return nil, false
	}
	return r, true
}

func (s *Server) createSuite(c *gin.Context) {
	body, ok := s.jsonBody(c, "the body")
	if !ok {
		return
	}
	su, err := s.Regression.CreateSuite(c.Request.Context(), owner(c), body)
	if err != nil {
		writeError(c, err)
		return
	}
	c.Header("Location", "/v1/suites/"+su.ID)
	c.JSON(http.StatusCreated, suiteJSON(su))
}

func (s *Server) listSuites(c *gin.Context) {
	limit, cursor, ok := s.page(c)
	if !ok {
		return
	}
	list, next, err := s.Repo.ListSuites(c.Request.Context(), s.listOwner(c), limit, cursor)
	if err != nil {
		writeError(c, err)
		return
	}
	out := make([]gin.H, len(list))
	for i, su := range list {
		out[i] = suiteJSON(su)
	}
	c.JSON(http.StatusOK, gin.H{"suites": out, "next_cursor": nullable(next)})
}

func (s *Server) getSuite(c *gin.Context) {
	id, ok := pathID(c)
	if !ok {
		return
	}
	if su, ok := s.suite(c, id); ok {
		c.JSON(http.StatusOK, suiteJSON(su))
	}
}

func (s *Server) updateSuite(c *gin.Context) {
	id, ok := pathID(c)
	if !ok {
		return
	}
	body, ok := s.jsonBody(c, "the body")
	if !ok {
		return
	}
	cur, ok := s.suite(c, id)
	if !ok {
		return
	}
	su, err := s.Regression.UpdateSuite(c.Request.Context(), cur, body)
	if err != nil {
		writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, suiteJSON(su))
}

func (s *Server) deleteSuite(c *gin.Context) {
	id, ok := pathID(c)
	if !ok {
		return
	}
	if _, ok := s.suite(c, id); !ok {
		return
	}
	if err := s.Repo.DeleteSuite(c.Request.Context(), id); err != nil {
		writeError(c, fmt.Errorf("suite %s: %w", id, err))
		return
	}
	c.Status(http.StatusNoContent)
}

func (s *Server) startRun(c *gin.Context) {
	id, ok := pathID(c)
	if !ok {
		return
	}
	su, ok := s.suite(c, id)
	if !ok {
		return
	}
	r, err := s.Regression.StartRun(c.Request.Context(), su, regression.TriggerManual, nil)
	if err != nil {
		writeError(c, err)
		return
	}
	c.Header("Location", "/v1/runs/"+r.ID)
	c.JSON(http.StatusAccepted, runJSON(r, s.baseURL(c)))
}

func (s *Server) listRuns(c *gin.Context) {
	id, ok := pathID(c)
	if !ok {
		return
	}
	limit, cursor, ok := s.page(c)
	if !ok {
		return
	}
	if _, ok := s.suite(c, id); !ok {
		return
	}
	runs, next, err := s.Repo.ListRuns(c.Request.Context(), id, limit, cursor)
	if err != nil {
		writeError(c, err)
		return
	}
	base := s.baseURL(c)
	out := make([]gin.H, len(runs))
	for i, r := range runs {
		out[i] = runJSON(r, base)
	}
	c.JSON(http.StatusOK, gin.H{"runs": out, "next_cursor": nullable(next)})
}

func (s *Server) getRun(c *gin.Context) {
	id, ok := pathID(c)
	if !ok {
		return
	}
	if r, ok := s.run(c, id); ok {
		c.JSON(http.StatusOK, runJSON(r, s.baseURL(c)))
	}
}

func (s *Server) approveRun(c *gin.Context) {
	id, ok := pathID(c)
	if !ok {
		return
	}
	body, ok := s.jsonBody(c, "the body")
	if !ok {
		return
	}
	a, err := parseApproval(body)
	if err != nil {
		writeError(c, err)
		return
	}
	if _, ok := s.run(c, id); !ok {
		return
	}
	r, err := s.Repo.Approve(c.Request.Context(), id, a, approver(c))
	if err != nil {
		writeError(c, fmt.Errorf("run %s: %w", id, err))
		return
	}
	c.JSON(http.StatusOK, runJSON(r, s.baseURL(c)))
}

// parseApproval accepts exactly one of {"all": true}, {"targets": [...]},
// {"comparisons": [...]}.
func parseApproval(body []byte) (regression.Approval, error) {
	var a regression.Approval
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return a, &jobs.ValidationError{Fields: []jobs.FieldError{{Code: "invalid_json", Field: "",
			Message: "send {\"all\": true}, {\"targets\": [names]} or {\"comparisons\": [ids]}: " + err.Error()}}}
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
	if given != 1 {
		return a, &jobs.ValidationError{Fields: []jobs.FieldError{{Code: "invalid_approval", Field: "",
			Message: "give exactly one of all (true), targets (names) or comparisons (ids)"}}}
	}
	for i, id := range a.Comparisons {
		if !jobs.ValidID(id) {
			return a, &jobs.ValidationError{Fields: []jobs.FieldError{{Code: "invalid_id",
				Field: fmt.Sprintf("comparisons[%d]", i), Message: "is not a comparison id"}}}
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

func (s *Server) listBaselines(c *gin.Context) {
	id, ok := pathID(c)
	if !ok {
		return
	}
	if _, ok := s.suite(c, id); !ok {
		return
	}
	history := c.Query("history") == "true"
	bs, err := s.Repo.ListBaselines(c.Request.Context(), id, history)
	if err != nil {
		writeError(c, err)
		return
	}
	base := s.baseURL(c)
	out := make([]gin.H, len(bs))
	for i, b := range bs {
		out[i] = baselineJSON(b, base)
	}
	c.JSON(http.StatusOK, gin.H{"baselines": out})
}

func (s *Server) restoreBaseline(c *gin.Context) {
	id, ok := pathID(c)
	if !ok {
		return
	}
	b, err := s.Repo.GetBaseline(c.Request.Context(), id)
	if err != nil {
		writeError(c, fmt.Errorf("baseline %s: %w", id, err))
		return
	}
	if _, ok := s.suite(c, b.SuiteID); !ok {
		return
	}
	if b.Artifact == nil {
		writeError(c, fmt.Errorf("%w: baseline version %d removed its segment; restore a version with an image", jobs.ErrConflict, b.Version))
		return
	}
	nb, err := s.Repo.RestoreBaseline(c.Request.Context(), id, approver(c))
	if err != nil {
		writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, baselineJSON(nb, s.baseURL(c)))
}

func suiteJSON(su *regression.Suite) gin.H {
	var webhook any
	if su.Webhook != nil {
		webhook = gin.H{"url": su.Webhook.URL}
	}
	var last any
	if r := su.LastRun; r != nil {
		last = gin.H{"id": r.ID, "status": r.Status, "created_at": r.CreatedAt, "finished_at": r.FinishedAt}
	}
	return gin.H{"id": su.ID, "name": su.Name, "targets": su.Spec.Targets, "options": su.Spec.Options,
		"schedule": su.Schedule, "threshold": su.Spec.Threshold, "pixel_threshold": su.Spec.PixelThreshold,
		"ignore": su.Spec.Ignore, "enabled": su.Enabled, "webhook": webhook,
		"created_at": su.CreatedAt, "updated_at": su.UpdatedAt, "last_run": last}
}

func runJSON(r *regression.Run, base string) gin.H {
	out := gin.H{"id": r.ID, "suite_id": r.SuiteID, "batch_id": r.BatchID, "trigger": r.Trigger,
		"scheduled_for": r.ScheduledFor, "status": r.Status, "counts": r.Counts,
		"created_at": r.CreatedAt, "finished_at": r.FinishedAt}
	if r.Comparisons != nil {
		cs := make([]gin.H, len(r.Comparisons))
		for i, cmp := range r.Comparisons {
			cs[i] = gin.H{"id": cmp.ID, "job_id": cmp.JobID, "target": cmp.Target, "viewport": cmp.Viewport,
				"segment": cmp.Segment, "status": cmp.Status, "diff_pixels": cmp.DiffPixels,
				"diff_ratio": cmp.DiffRatio, "threshold": cmp.Threshold, "message": cmp.Message,
				"baseline": imageRef(cmp.BaselineArtifact, base), "current": imageRef(cmp.CurrentArtifact, base),
				"diff": imageRef(cmp.DiffArtifact, base), "approved": cmp.ApprovedAt != nil, "approved_at": cmp.ApprovedAt}
		}
		out["comparisons"] = cs
	}
	return out
}

func imageRef(a *jobs.Artifact, base string) any {
	if a == nil {
		return nil
	}
	return gin.H{"artifact_id": a.ID, "url": base + "/v1/artifacts/" + a.ID, "width": a.Width, "height": a.Height}
}

func baselineJSON(b *regression.Baseline, base string) gin.H {
	var artID, url any
	if b.Artifact != nil {
		artID, url = b.Artifact.ID, base+"/v1/artifacts/"+b.Artifact.ID
	}
	return gin.H{"id": b.ID, "suite_id": b.SuiteID, "target": b.Target, "viewport": b.Viewport,
		"segment": b.Segment, "version": b.Version, "artifact_id": artID, "url": url, "run_id": nullable(b.RunID),
		"restored_from": nullable(b.RestoredFrom), "approved_by": b.ApprovedBy, "approved_at": b.ApprovedAt,
		"active": b.Active}
}
