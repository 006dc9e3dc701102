package web

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/maintenance"
)

// POST /v1/admin/sweep runs a maintenance pass now (retention, the orphan
// sweep, the missing-object check) and answers with its report. It touches
// every tenant's data, so it takes the admin token (SNAPQ_ADMIN_TOKEN), not
// an API key; with auth off and no token set it is open like the rest.

// SweepPath is the on-demand maintenance route.
const SweepPath = "/v1/admin/sweep"

// sweepTimeout bounds an on-demand pass, under the server's write timeout;
// what it did not reach, the next pass does.
const sweepTimeout = 50 * time.Second

// MaintenanceRunner runs one maintenance pass (maintenance.Maintenance).
type MaintenanceRunner interface {
	Pass(ctx context.Context, dryRun bool) (maintenance.SweepReport, error)
}

// sweepRequest is the body of POST /v1/admin/sweep.
type sweepRequest struct {
	// DryRun reports what the pass would delete and deletes nothing.
	DryRun bool `json:"dry_run"`
}

func (s *Server) routeAdmin(r *gin.Engine) {
	r.POST(SweepPath, s.h(s.limitAuthFailures(s.authenticateAdmin)), s.h(s.rateLimit),
		s.h(s.readJSON("the sweep request")), s.h(s.runSweep))
}

// authenticateAdmin takes the admin token as a Bearer token. A valid API key
// gets 403 admin_required; anything else 401.
func (s *Server) authenticateAdmin(c *gin.Context) error {
	const bearer = "bearer "
	secret := ""
	if h := c.GetHeader("Authorization"); len(h) > len(bearer) && strings.EqualFold(h[:len(bearer)], bearer) {
		secret = strings.TrimSpace(h[len(bearer):])
	}
	if s.isAdmin(secret) {
		c.Set(ownerKey, "admin")
		return nil
	}
	if !s.Config.Auth && s.Config.AdminToken == "" {
		c.Set(ownerKey, "")
		return nil
	}
	if secret == "" {
		return unauthorized("send the admin token (SNAPQ_ADMIN_TOKEN) as Authorization: Bearer <token>")
	}
	if s.Keys != nil {
		id, err := s.validKey(c.Request.Context(), secret)
		if err != nil {
			return err
		}
		if id != "" {
			return &apiError{Status: http.StatusForbidden, Code: "admin_required",
				Message: "a maintenance pass deletes every tenant's expired data: send the admin token (SNAPQ_ADMIN_TOKEN), not an API key"}
		}
	}
	return unauthorized("the admin token is not valid")
}

func (s *Server) runSweep(c *gin.Context) error {
	if s.Maintenance == nil {
		return &apiError{Status: http.StatusNotFound, Code: "not_found", Message: "maintenance passes are not configured on this server"}
	}
	body, err := loaded[[]byte](c, bodyKey)
	if err != nil {
		return err
	}
	var req sweepRequest
	if len(strings.TrimSpace(string(body))) > 0 {
		var errs jobs.FieldErrors
		if !jobs.DecodeStrict(body, &req, "", &errs) || len(errs) > 0 {
			return jobs.ValidationErrors(errs)
		}
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), sweepTimeout)
	defer cancel()
	rep, err := s.Maintenance.Pass(ctx, req.DryRun)
	if errors.Is(err, maintenance.ErrPassRunning) {
		return &apiError{Status: http.StatusConflict, Code: "sweep_running", Message: "a maintenance pass is already running on this replica; try again when it ends"}
	}
	if err != nil {
		s.logger().Warn("maintenance pass", "err", err) // the report lists the failures
	}
	c.JSON(http.StatusOK, rep)
	return nil
}
