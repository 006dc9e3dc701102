package web

import (
	"context"

	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
	"github.com/snapq/snapq/webhook"
)

// Presigner turns an object key into a time-limited download URL.
// artifacts.Store implements it.
type Presigner interface {
	PresignGet(ctx context.Context, key, filename string) (string, error)
}

// BatchReader is what the API reads of batches, jobs and artifacts.
type BatchReader interface {
	GetBatch(ctx context.Context, id string) (*jobs.Batch, error)
	// ListBatches returns batches newest first; cursor is the last id seen.
	// owner filters by API key id; jobs.AnyOwner lists every batch.
	ListBatches(ctx context.Context, owner, status string, limit int, cursor string) ([]*jobs.Batch, string, error)
	// ListJobs returns a batch's jobs in submission order, after cursor.
	ListJobs(ctx context.Context, batchID, status string, limit int, cursor string) ([]*jobs.Job, string, error)
	GetJob(ctx context.Context, id string) (*jobs.Job, error)
	ListArtifacts(ctx context.Context, jobID string) ([]*jobs.Artifact, error)
	// FirstScreenshots returns each listed job's first screenshot (its preview), by job id.
	FirstScreenshots(ctx context.Context, jobIDs []string) (map[string]*jobs.Artifact, error)
	GetArtifact(ctx context.Context, id string) (*jobs.Artifact, error)
}

// WebhookReader is what the API reads of a batch's webhook and deliveries.
type WebhookReader interface {
	webhook.Deliveries
	// GetBatchWebhook returns the batch's webhook, or jobs.ErrNotFound when it has none.
	GetBatchWebhook(ctx context.Context, batchID string) (*jobs.Webhook, error)
}

// Repository is everything the API reads; store.Store implements it.
type Repository interface {
	BatchReader
	WebhookReader
	regression.Reader
}

// Check is one readiness probe (Postgres, Redis, object storage).
type Check struct {
	Name string
	Ping func(ctx context.Context) error
}

// Config configures the router.
type Config struct {
	// MaxBodyBytes caps request bodies, measured on the bytes read
	// (default 1 MiB).
	MaxBodyBytes int64
	// PublicURL is the base of artifact URLs in responses; empty means the
	// scheme and host of each request.
	PublicURL string
	// Auth requires an API key on /v1 (SNAPQ_AUTH, on by default).
	Auth bool
	// CORSOrigins are the exact origins browsers may call the API from.
	CORSOrigins []string
}

// Server holds the API's dependencies.
type Server struct {
	Service *jobs.Service
	// Regression serves suites and runs (suites.go).
	Regression *regression.Service
	Repo       Repository
	Presigner  Presigner
	Keys       jobs.KeyStore
	Limiter    RateLimiter // nil: no rate limit
	Checks     []Check
	Queues     http.Handler // queue-health UI (asynqmon) mounted at QueuesPath; nil: none
	Metrics    *Metrics     // GET /metrics and request metrics (metrics.go); nil: none
	Logger     *slog.Logger
	Config     Config
}

const (
	defaultMaxBody  = 1 << 20
	defaultPageSize = 100
	maxPageSize     = 1000
)

// Handler builds the gin engine.
func (s *Server) Handler() http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.Use(s.observeRequests, gin.Recovery(), s.accessLog(), s.cors) // observe outside Recovery: panics count as 500
	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	r.GET("/readyz", s.ready)
	s.mountDashboard(r)
	s.mountQueues(r)
	s.mountMetrics(r)
	v1 := r.Group("/v1", s.artifactKeyCookie, s.authenticate, s.rateLimit)
	v1.POST("/batches", s.createBatch)
	v1.GET("/batches", s.listBatches)
	v1.GET("/batches/:id", s.getBatch)
	v1.GET("/batches/:id/jobs", s.listJobs)
	v1.GET("/batches/:id/webhooks", s.listWebhooks)
	v1.POST("/batches/:id/cancel", s.cancelBatch)
	v1.GET("/jobs/:id", s.getJob)
	v1.GET("/artifacts/:id", s.getArtifact)
	s.routeSuites(v1) // suites.go
	r.NoRoute(func(c *gin.Context) {
		c.JSON(http.StatusNotFound, gin.H{"error": apiError{Code: "not_found", Message: "no such endpoint: " + c.Request.URL.Path}})
	})
	r.NoMethod(func(c *gin.Context) {
		c.JSON(http.StatusMethodNotAllowed, gin.H{"error": apiError{Code: "method_not_allowed",
			Message: c.Request.Method + " is not allowed on " + c.Request.URL.Path}})
	})
	return r
}

func (s *Server) accessLog() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		attrs := []any{"method", c.Request.Method, "path", c.Request.URL.Path, "status", c.Writer.Status(),
			"ms", time.Since(start).Milliseconds()}
		if len(c.Errors) > 0 {
			s.logger().Error("request failed", append(attrs, "err", c.Errors.String())...)
			return
		}
		if c.Request.URL.Path != "/healthz" && c.Request.URL.Path != "/readyz" {
			s.logger().Debug("request", attrs...)
		}
	}
}

func (s *Server) ready(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 3*time.Second)
	defer cancel()
	status := http.StatusOK
	checks := gin.H{}
	for _, ch := range s.Checks {
		if err := ch.Ping(ctx); err != nil {
			status = http.StatusServiceUnavailable
			checks[ch.Name] = err.Error()
			continue
		}
		checks[ch.Name] = "ok"
	}
	state := "ready"
	if status != http.StatusOK {
		state = "unavailable"
	}
	c.JSON(status, gin.H{"status": state, "checks": checks})
}

func (s *Server) createBatch(c *gin.Context) {
	body, ok := s.jsonBody(c, "the batch")
	if !ok {
		return
	}
	idem := c.GetHeader("Idempotency-Key")
	if len(idem) > jobs.MaxIdempotencyKey {
		badRequest(c, "invalid_header", "Idempotency-Key", "must be at most 255 characters")
		return
	}
	b, js, replayed, err := s.Service.Submit(c.Request.Context(), jobs.Submission{Body: body, Owner: owner(c), IdempotencyKey: idem})
	if err != nil {
		writeError(c, err)
		return
	}
	if replayed {
		c.Header("Idempotent-Replayed", "true")
	}
	out := batchJSON(b)
	list := make([]gin.H, len(js))
	for i, j := range js {
		list[i] = gin.H{"id": j.ID, "url": j.URL, "name": j.Name, "status": j.Status}
	}
	out["jobs"] = list
	c.Header("Location", "/v1/batches/"+b.ID)
	c.JSON(http.StatusAccepted, out)
}

// readBody reads at most limit bytes; anything beyond, including bytes after
// the JSON value, makes the body too large.
func readBody(r io.Reader, limit int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("%w: the limit is %d bytes", errBodyTooLarge, limit)
	}
	return body, nil
}

func (s *Server) listBatches(c *gin.Context) {
	status := c.Query("status")
	switch status {
	case "", jobs.BatchQueued, jobs.BatchRunning, jobs.BatchCompleted:
	default:
		badRequest(c, "invalid_query", "status", "must be one of queued, running, completed")
		return
	}
	limit, cursor, ok := s.page(c)
	if !ok {
		return
	}
	bs, next, err := s.Repo.ListBatches(c.Request.Context(), s.listOwner(c), status, limit, cursor)
	if err != nil {
		writeError(c, err)
		return
	}
	out := make([]gin.H, len(bs))
	for i, b := range bs {
		out[i] = batchJSON(b)
	}
	c.JSON(http.StatusOK, gin.H{"batches": out, "next_cursor": nullable(next)})
}

func (s *Server) getBatch(c *gin.Context) {
	id, ok := pathID(c)
	if !ok {
		return
	}
	b, ok := s.batch(c, id)
	if !ok {
		return
	}
	c.JSON(http.StatusOK, batchJSON(b))
}

// batch loads a batch the caller may see; otherwise it answers 404 and
// returns false.
func (s *Server) batch(c *gin.Context, id string) (*jobs.Batch, bool) {
	b, err := s.Repo.GetBatch(c.Request.Context(), id)
	if err == nil && !s.visible(c, b) {
		err = jobs.ErrNotFound
	}
	if err != nil {
		writeError(c, fmt.Errorf("batch %s: %w", id, err))
		return nil, false
	}
	return b, true
}

func (s *Server) cancelBatch(c *gin.Context) {
	id, ok := pathID(c)
	if !ok {
		return
	}
	if _, ok := s.batch(c, id); !ok {
		return
	}
	b, err := s.Service.Cancel(c.Request.Context(), id)
	if err != nil {
		writeError(c, fmt.Errorf("batch %s: %w", id, err))
		return
	}
	c.JSON(http.StatusOK, batchJSON(b))
}

func (s *Server) listJobs(c *gin.Context) {
	id, ok := pathID(c)
	if !ok {
		return
	}
	status := c.Query("status")
	switch status {
	case "", jobs.StatusQueued, jobs.StatusRunning, jobs.StatusSucceeded, jobs.StatusFailed, jobs.StatusCanceled:
	default:
		badRequest(c, "invalid_query", "status", "must be one of queued, running, succeeded, failed, canceled")
		return
	}
	limit, cursor, ok := s.page(c)
	if !ok {
		return
	}
	if _, ok := s.batch(c, id); !ok {
		return
	}
	js, next, err := s.Repo.ListJobs(c.Request.Context(), id, status, limit, cursor)
	if err != nil {
		writeError(c, err)
		return
	}
	ids := make([]string, len(js))
	for i, j := range js {
		ids[i] = j.ID
	}
	previews, err := s.Repo.FirstScreenshots(c.Request.Context(), ids)
	if err != nil {
		writeError(c, err)
		return
	}
	base := s.baseURL(c)
	out := make([]gin.H, len(js))
	for i, j := range js {
		out[i] = jobJSON(j)
		out[i]["preview"] = imageRef(previews[j.ID], base) // the first screenshot, for thumbnails
	}
	c.JSON(http.StatusOK, gin.H{"jobs": out, "next_cursor": nullable(next)})
}

func (s *Server) getJob(c *gin.Context) {
	id, ok := pathID(c)
	if !ok {
		return
	}
	j, err := s.Repo.GetJob(c.Request.Context(), id)
	if err != nil {
		writeError(c, fmt.Errorf("job %s: %w", id, err))
		return
	}
	if _, ok := s.batch(c, j.BatchID); !ok {
		return
	}
	arts, err := s.Repo.ListArtifacts(c.Request.Context(), id)
	if err != nil {
		writeError(c, err)
		return
	}
	out := jobJSON(j)
	base := s.baseURL(c)
	list := make([]gin.H, len(arts))
	for i, a := range arts {
		list[i] = gin.H{"id": a.ID, "kind": a.Kind, "name": a.Name, "content_type": a.ContentType, "bytes": a.Bytes,
			"width": a.Width, "height": a.Height, "sha256": a.SHA256, "url": base + "/v1/artifacts/" + a.ID}
	}
	out["artifacts"] = list
	c.JSON(http.StatusOK, out)
}

func (s *Server) getArtifact(c *gin.Context) {
	id, ok := pathID(c)
	if !ok {
		return
	}
	a, err := s.Repo.GetArtifact(c.Request.Context(), id)
	if err != nil {
		writeError(c, fmt.Errorf("artifact %s: %w", id, err))
		return
	}
	j, err := s.Repo.GetJob(c.Request.Context(), a.JobID)
	if err != nil {
		writeError(c, fmt.Errorf("artifact %s: %w", id, err))
		return
	}
	if _, ok := s.batch(c, j.BatchID); !ok {
		return
	}
	u, err := s.Presigner.PresignGet(c.Request.Context(), a.ObjectKey, a.Name)
	if err != nil {
		writeError(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.Redirect(http.StatusFound, u)
}

func (s *Server) page(c *gin.Context) (int, string, bool) {
	limit := defaultPageSize
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPageSize {
			badRequest(c, "invalid_query", "limit", "must be a whole number from 1 to "+itoa(maxPageSize))
			return 0, "", false
		}
		limit = n
	}
	cursor := c.Query("cursor")
	if cursor != "" && !jobs.ValidID(cursor) {
		badRequest(c, "invalid_query", "cursor", "is not a cursor returned by this API")
		return 0, "", false
	}
	return limit, cursor, true
}

func pathID(c *gin.Context) (string, bool) {
	id := c.Param("id")
	if !jobs.ValidID(id) {
		writeError(c, fmt.Errorf("%q is not a valid id: %w", id, jobs.ErrNotFound))
		return "", false
	}
	return strings.ToLower(id), true
}

func (s *Server) baseURL(c *gin.Context) string {
	if s.Config.PublicURL != "" {
		return strings.TrimRight(s.Config.PublicURL, "/")
	}
	scheme := "http"
	if c.Request.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + c.Request.Host
}

func (s *Server) maxBody() int64 {
	if s.Config.MaxBodyBytes > 0 {
		return s.Config.MaxBodyBytes
	}
	return defaultMaxBody
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func batchJSON(b *jobs.Batch) gin.H {
	return gin.H{"id": b.ID, "status": b.Status(), "total": b.Total, "counts": b.Counts, "labels": b.Labels,
		"created_at": b.CreatedAt, "finished_at": b.FinishedAt}
}

func jobJSON(j *jobs.Job) gin.H {
	var jerr any
	if j.ErrorCode != "" {
		jerr = jobs.JobError{Code: j.ErrorCode, Message: j.ErrorMessage}
	}
	return gin.H{"id": j.ID, "batch_id": j.BatchID, "url": j.URL, "name": j.Name, "status": j.Status,
		"attempts": j.Attempts, "error": jerr, "result": j.Result, "options": j.Options,
		"created_at": j.CreatedAt, "started_at": j.StartedAt, "finished_at": j.FinishedAt}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }
