package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

// Routes with :id load what the id names in middleware (loadBatch, loadJob,
// …) before the handler runs. Each loader answers 404 for an id that is not an
// id, that names nothing, or that names another API key's resource (never 403,
// so ids cannot be probed), and stores the resource in the gin context, where
// the handler reads it with loaded.
//
// The order of answers is: the :id (validIDParam, for all of /v1), then the
// request checks (listQuery, readJSON, readApproval, middleware in front of
// the loader), then the resource, so a request that is wrong twice gets the
// answer it got when each handler did all three itself.

// Gin context keys of what the middleware stores.
const (
	batchKey    = "snapq.batch"
	jobKey      = "snapq.job"
	artifactKey = "snapq.artifact"
	suiteKey    = "snapq.suite"
	runKey      = "snapq.run"
	baselineKey = "snapq.baseline"
	listKey     = "snapq.list"
	bodyKey     = "snapq.body"
	approvalKey = "snapq.approval"
)

// loaded returns the value middleware stored under key. A missing value is a
// route registered without its middleware: an internal error, not a panic.
func loaded[T any](c *gin.Context, key string) (T, error) {
	stored, _ := c.Get(key)
	v, ok := stored.(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("route %s has no %s middleware", c.FullPath(), key)
	}
	return v, nil
}

// loader is middleware that validates :id, loads what it names with load and
// stores it under key.
func loader[T any](s *Server, key string, load func(c *gin.Context, id string) (T, error)) gin.HandlerFunc {
	return s.h(func(c *gin.Context) error {
		id, err := pathID(c)
		if err != nil {
			return err
		}
		v, err := load(c, id)
		if err != nil {
			return err
		}
		c.Set(key, v)
		return nil
	})
}

// validIDParam is /v1 middleware: a route's :id that is not an id is 404,
// before any other check of the request.
func validIDParam(c *gin.Context) error {
	if _, ok := c.Params.Get("id"); !ok {
		return nil
	}
	_, err := pathID(c)
	return err
}

// pathID returns the lower-cased :id, or a not-found error when it is not an id.
func pathID(c *gin.Context) (string, error) {
	id := c.Param("id")
	if !jobs.ValidID(id) {
		return "", fmt.Errorf("%q is not a valid id: %w", id, jobs.ErrNotFound)
	}
	return strings.ToLower(id), nil
}

func (s *Server) loadBatch(c *gin.Context) { loader(s, batchKey, s.ownedBatch)(c) }
func (s *Server) loadJob(c *gin.Context)   { loader(s, jobKey, s.ownedJob)(c) }
func (s *Server) loadArtifact(c *gin.Context) {
	loader(s, artifactKey, s.ownedArtifact)(c)
}
func (s *Server) loadSuite(c *gin.Context) { loader(s, suiteKey, s.ownedSuite)(c) }
func (s *Server) loadRun(c *gin.Context)   { loader(s, runKey, s.ownedRun)(c) }
func (s *Server) loadBaseline(c *gin.Context) {
	loader(s, baselineKey, s.ownedBaseline)(c)
}

// ownedBatch loads a batch the caller may see.
func (s *Server) ownedBatch(c *gin.Context, id string) (*jobs.Batch, error) {
	b, err := s.Batches.GetBatch(c.Request.Context(), id)
	if err == nil && !s.visible(c, b) {
		err = jobs.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("batch %s: %w", id, err)
	}
	return b, nil
}

// ownedJob loads a job whose batch the caller may see.
func (s *Server) ownedJob(c *gin.Context, id string) (*jobs.Job, error) {
	j, err := s.Batches.GetJob(c.Request.Context(), id)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", id, err)
	}
	if _, err := s.ownedBatch(c, j.BatchID); err != nil {
		return nil, err
	}
	return j, nil
}

// ownedArtifact loads an artifact whose job's batch the caller may see.
func (s *Server) ownedArtifact(c *gin.Context, id string) (*jobs.Artifact, error) {
	a, err := s.Batches.GetArtifact(c.Request.Context(), id)
	if err != nil {
		return nil, fmt.Errorf("artifact %s: %w", id, err)
	}
	j, err := s.Batches.GetJob(c.Request.Context(), a.JobID)
	if err != nil {
		return nil, fmt.Errorf("artifact %s: %w", id, err)
	}
	if _, err := s.ownedBatch(c, j.BatchID); err != nil {
		return nil, err
	}
	return a, nil
}

// ownedSuite loads a suite the caller may see.
func (s *Server) ownedSuite(c *gin.Context, id string) (*regression.Suite, error) {
	su, err := s.Suites.GetSuite(c.Request.Context(), id)
	if err == nil && s.Config.Auth && su.OwnerKeyID != owner(c) {
		err = jobs.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("suite %s: %w", id, err)
	}
	return su, nil
}

// ownedRun loads a run whose suite the caller may see, without its
// comparisons (a handler that shows them loads them).
func (s *Server) ownedRun(c *gin.Context, id string) (*regression.Run, error) {
	r, err := s.Suites.GetRunSummary(c.Request.Context(), id)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	if _, err := s.ownedSuite(c, r.SuiteID); err != nil {
		return nil, err
	}
	return r, nil
}

// ownedBaseline loads a baseline version whose suite the caller may see.
func (s *Server) ownedBaseline(c *gin.Context, id string) (*regression.Baseline, error) {
	b, err := s.Suites.GetBaseline(c.Request.Context(), id)
	if err != nil {
		return nil, fmt.Errorf("baseline %s: %w", id, err)
	}
	if _, err := s.ownedSuite(c, b.SuiteID); err != nil {
		return nil, err
	}
	return b, nil
}

// batchStatuses are the ?status filters of GET /v1/batches; GET
// /v1/batches/:id/jobs takes jobStatuses (metrics.go).
var batchStatuses = []string{string(jobs.BatchQueued), string(jobs.BatchRunning), string(jobs.BatchCompleted)}

// listQueryParams are a list request's ?status, ?limit and ?cursor.
type listQueryParams struct {
	status string
	limit  int
	cursor string
}

// listQuery is middleware that checks ?status (one of statuses, when given;
// ignored when statuses is nil), then ?limit and ?cursor, and stores them
// under listKey.
func listQuery(statuses []string) handler {
	return func(c *gin.Context) error {
		q := listQueryParams{limit: defaultPageSize}
		if statuses != nil {
			q.status = c.Query("status")
			if q.status != "" && !contains(statuses, q.status) {
				return badRequest("invalid_query", "status", "must be one of "+strings.Join(statuses, ", "))
			}
		}
		if v := c.Query("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxPageSize {
				return badRequest("invalid_query", "limit", "must be a whole number from 1 to "+itoa(maxPageSize))
			}
			q.limit = n
		}
		q.cursor = c.Query("cursor")
		if q.cursor != "" && !jobs.ValidID(q.cursor) {
			return badRequest("invalid_query", "cursor", "is not a cursor returned by this API")
		}
		c.Set(listKey, q)
		return nil
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// readJSON is middleware that reads a JSON request body within the size
// limit and stores it under bodyKey; what names it in the error for another
// media type ("the batch").
func (s *Server) readJSON(what string) handler {
	return func(c *gin.Context) error {
		if ct := c.ContentType(); ct != "" && ct != "application/json" {
			return &apiError{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type", Message: "send " + what + " as application/json"}
		}
		b, err := readBody(c.Request.Body, s.maxBody())
		if err != nil {
			return err
		}
		c.Set(bodyKey, b)
		return nil
	}
}
