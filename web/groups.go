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

// Change groups (issue 16, review at scale): the comparisons of a run that
// show the same change, listed together and approved or rejected in one call.

func (s *Server) routeGroups(v1 *gin.RouterGroup) {
	v1.GET("/runs/:id/groups", s.loadRun, s.h(s.listGroups))
	v1.POST("/runs/:id/groups/:group/approve", s.loadRun, s.h(s.approveGroup))
	v1.POST("/runs/:id/groups/:group/reject", s.loadRun, s.h(s.rejectGroup))
	v1.POST("/runs/:id/reject", s.h(s.readJSON("the body")), s.h(readRejection), s.loadRun, s.h(s.rejectComparisons))
}

// maxRejected bounds one reject request's ids.
const maxRejected = 10000

// rejectionKey holds the ids readRejection parsed.
const rejectionKey = "snapq.rejection"

// readRejection is middleware that parses {"comparisons": [ids]}, checked
// before the run is loaded.
func readRejection(c *gin.Context) error {
	body, err := loaded[[]byte](c, bodyKey)
	if err != nil {
		return err
	}
	var req struct {
		Comparisons []string `json:"comparisons"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return badRequest("invalid_json", "", `send {"comparisons": [ids]}: `+err.Error())
	}
	if len(req.Comparisons) == 0 || len(req.Comparisons) > maxRejected {
		return badRequest("invalid_option", "comparisons", fmt.Sprintf("give 1 to %d comparison ids", maxRejected))
	}
	for i, id := range req.Comparisons {
		if !jobs.ValidID(id) {
			return badRequest("invalid_id", fmt.Sprintf("comparisons[%d]", i), "is not a comparison id")
		}
	}
	c.Set(rejectionKey, req.Comparisons)
	return nil
}

// rejectComparisons marks the comparisons readRejection read rejected
// (those that wait for review; the others are left as they are) and
// answers {rejected, run_status, counts}.
func (s *Server) rejectComparisons(c *gin.Context) error {
	ids, err := loaded[[]string](c, rejectionKey)
	if err != nil {
		return err
	}
	r, err := loaded[*regression.Run](c, runKey)
	if err != nil {
		return err
	}
	id := r.ID
	n, err := s.Suites.Reject(c.Request.Context(), id, ids, approver(c))
	if err != nil {
		return err
	}
	if r, err = s.Suites.GetRunSummary(c.Request.Context(), id); err != nil {
		return fmt.Errorf("run %s: %w", id, err)
	}
	c.JSON(http.StatusOK, gin.H{"rejected": n, "run_status": r.Status, "counts": r.Counts})
	return nil
}

// groupView is one change group of a run.
type groupView struct {
	ID   string `json:"id"` // the group key
	Size int    `json:"size"`
	// Counts counts the members by status, and those approved or rejected.
	Counts regression.GroupCounts `json:"counts"`
	// NeedsReview counts members failed, new or missing and neither
	// approved nor rejected.
	NeedsReview int `json:"needs_review"`
	// Representative is a member that needs review (else the first), with
	// its diff image and thumbnail.
	Representative comparisonView `json:"representative"`
	// Comparisons are the members' ids.
	Comparisons []string `json:"comparisons"`
	// Targets and Viewports are the distinct targets and viewports of the
	// members.
	Targets   []string `json:"targets"`
	Viewports []string `json:"viewports"`
}

type groupList struct {
	RunID  string      `json:"run_id"`
	Groups []groupView `json:"groups"`
}

// groupAction answers an approval or a rejection of a group.
type groupAction struct {
	Group groupView `json:"group"`
	// Approved or Rejected counts the members this call approved or rejected.
	Approved  int                  `json:"approved"`
	Rejected  int                  `json:"rejected"`
	RunStatus regression.RunStatus `json:"run_status"`
	Counts    regression.RunCounts `json:"counts"`
}

func newGroupView(g *regression.Group, base string) groupView {
	out := groupView{ID: g.Key, Size: len(g.Comparisons), Counts: g.Counts,
		Representative: newComparisonView(g.Comparisons[0], base), Comparisons: make([]string, len(g.Comparisons)),
		Targets: []string{}, Viewports: []string{}}
	seenT, seenV := map[string]bool{}, map[string]bool{}
	for i, c := range g.Comparisons {
		out.Comparisons[i] = c.ID
		if c.NeedsReview() {
			out.NeedsReview++
		}
		if !seenT[c.Target] {
			seenT[c.Target] = true
			out.Targets = append(out.Targets, c.Target)
		}
		if !seenV[c.Viewport] {
			seenV[c.Viewport] = true
			out.Viewports = append(out.Viewports, c.Viewport)
		}
	}
	return out
}

func (s *Server) listGroups(c *gin.Context) error {
	r, err := s.fullRun(c)
	if err != nil {
		return err
	}
	base := s.baseURL(c)
	gs := regression.Groups(r.Comparisons)
	out := groupList{RunID: r.ID, Groups: make([]groupView, len(gs))}
	for i, g := range gs {
		out.Groups[i] = newGroupView(g, base)
	}
	c.JSON(http.StatusOK, out)
	return nil
}

// fullRun is the loaded run with its comparisons (loadRun loads the run's
// summary only).
func (s *Server) fullRun(c *gin.Context) (*regression.Run, error) {
	r, err := loaded[*regression.Run](c, runKey)
	if err != nil {
		return nil, err
	}
	full, err := s.Suites.GetRun(c.Request.Context(), r.ID)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", r.ID, err)
	}
	return full, nil
}

// runGroup finds the :group of the loaded run: 404 when it has none so named.
func (s *Server) runGroup(c *gin.Context) (*regression.Run, *regression.Group, error) {
	r, err := s.fullRun(c)
	if err != nil {
		return nil, nil, err
	}
	key := c.Param("group")
	for _, g := range regression.Groups(r.Comparisons) {
		if g.Key == key {
			return r, g, nil
		}
	}
	return nil, nil, fmt.Errorf("run %s has no change group %q: %w", r.ID, key, jobs.ErrNotFound)
}

// approveGroup approves every member of a group that waits for approval
// (failed, new or missing): one approval of those comparisons, a baseline
// version each, as POST /v1/runs/:id/approve with their ids.
func (s *Server) approveGroup(c *gin.Context) error {
	r, g, err := s.runGroup(c)
	if err != nil {
		return err
	}
	before, id := g.Counts.Approved, r.ID
	if ids := g.Reviewable(); len(ids) > 0 {
		if r, err = s.Suites.Approve(c.Request.Context(), id, regression.Approval{Comparisons: ids}, approver(c)); err != nil {
			return fmt.Errorf("run %s: %w", id, err)
		}
		if s.Regression.ReportApproved != nil { // as approveRun: the run's commit status follows
			s.Regression.ReportApproved(c.Request.Context(), r)
		}
		if r, err = s.Suites.GetRun(c.Request.Context(), id); err != nil { // Approve answers without comparisons
			return fmt.Errorf("run %s: %w", id, err)
		}
	}
	return s.answerGroup(c, r, g.Key, func(after *regression.Group) (int, int) { return after.Counts.Approved - before, 0 })
}

// rejectGroup marks every member of a group that waits for review rejected:
// they stay failed, with who rejected them and when.
func (s *Server) rejectGroup(c *gin.Context) error {
	r, g, err := s.runGroup(c)
	if err != nil {
		return err
	}
	id := r.ID
	n, err := s.Suites.Reject(c.Request.Context(), id, g.Reviewable(), approver(c))
	if err != nil {
		return err
	}
	if r, err = s.Suites.GetRun(c.Request.Context(), id); err != nil {
		return fmt.Errorf("run %s: %w", id, err)
	}
	return s.answerGroup(c, r, g.Key, func(*regression.Group) (int, int) { return 0, n })
}

func (s *Server) answerGroup(c *gin.Context, r *regression.Run, key string, counted func(*regression.Group) (int, int)) error {
	for _, g := range regression.Groups(r.Comparisons) {
		if g.Key == key {
			approved, rejected := counted(g)
			c.JSON(http.StatusOK, groupAction{Group: newGroupView(g, s.baseURL(c)), Approved: approved, Rejected: rejected,
				RunStatus: r.Status, Counts: r.Counts})
			return nil
		}
	}
	return fmt.Errorf("run %s lost change group %q", r.ID, key)
}
