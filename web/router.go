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

	"github.com/snapq/snapq/authprofile"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
	"github.com/snapq/snapq/session"
	"github.com/snapq/snapq/webhook"
)

// Presigner turns an object key into a time-limited download URL whose
// response names the file and its content type (a content-addressed object
// is shared by artifacts that may differ in both). artifacts.Store
// implements it.
type Presigner interface {
	PresignGetAs(ctx context.Context, key, filename, contentType string) (string, error)
}

// BatchReader is what the API reads of batches, jobs and artifacts.
type BatchReader interface {
	GetBatch(ctx context.Context, id string) (*jobs.Batch, error)
	// ListBatches returns batches newest first; cursor is the last id seen.
	// owner filters by API key id; jobs.AnyOwner lists every batch.
	ListBatches(ctx context.Context, owner, status string, limit int, cursor string) ([]*jobs.Batch, string, error)
	// ListJobs returns a batch's jobs in submission order, after cursor.
	ListJobs(ctx context.Context, batchID string, status jobs.JobStatus, limit int, cursor string) ([]*jobs.Job, string, error)
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
	// ListenAddr is the address the api listens on (SNAPQ_HTTP_ADDR); the
	// Host check (boundary.go) accepts it and the loopback names on its port.
	ListenAddr string
	// AllowedHosts are the other host names (name or name:port) requests may
	// be addressed to (SNAPQ_ALLOWED_HOSTS). The Host check runs when auth is
	// off, or when this is set.
	AllowedHosts []string
	// AdminToken opens the queue UI (/admin/queues), which lists every
	// tenant's tasks (SNAPQ_ADMIN_TOKEN); ordinary API keys get 403 there.
	// Empty: the queue UI is closed while auth is on.
	AdminToken string
	// BrowserlessPrefix is where the Browserless-compatible endpoints are
	// mounted (browserless.go; SNAPQ_BROWSERLESS_PREFIX, default
	// DefaultBrowserlessPrefix); "": not mounted.
	BrowserlessPrefix string
}

// Server holds the API's dependencies.
type Server struct {
	Service *jobs.Service
	// Regression serves suites and runs (suites.go).
	Regression *regression.Service
	Batches    BatchReader       // batches, jobs and artifacts; store.Store
	Suites     regression.Reader // suites, runs and baselines; store.Store
	// Rules serves suite rules and comparison changes (rules.go); nil: 404.
	Rules    regression.RuleStore
	Webhooks WebhookReader // a batch's webhook and deliveries; store.Store
	// AuthProfiles serves /v1/auth-profiles (authprofiles.go); nil: none.
	AuthProfiles *authprofile.Service
	Presigner    Presigner
	// Archives and Objects serve the archives of batches and runs
	// (archive.go); nil: those endpoints answer 404.
	Archives ArchiveSource
	Objects  ObjectOpener
	// Maintenance runs POST /v1/admin/sweep (sweep.go); nil: 404.
	Maintenance MaintenanceRunner
	// Thumbnails serves GET /v1/artifacts/:id/thumbnail; nil: 404.
	Thumbnails ThumbnailReader
	Keys       KeyReader
	Limiter    RateLimiter // nil: no rate limit
	// Budget caps per key the work done outside the capture queue (budget.go):
	// previews, auth tests, archives, event streams; nil: no cap.
	Budget jobs.WorkBudget
	// AuthFailures limits failed authentications per client address; nil: no limit.
	AuthFailures FailureLimiter
	Checks       []Check
	Queues       http.Handler // queue-health UI (asynqmon) mounted at QueuesPath; nil: none
	// QueueInspector feeds GET /v1/queues (counts summed over the QueueShards
	// shards of each kind); nil: the endpoint answers 404.
	QueueInspector QueueInspector
	QueueShards    int
	Metrics        *Metrics // GET /metrics and request metrics (metrics.go); nil: none
	Logger         *slog.Logger
	Config         Config
	// Sessions serves /v1/sessions (sessions.go); nil: 404.
	Sessions *session.Service
	// Events reads the live event streams (events.go); nil: the event routes answer 404.
	Events EventHub
	SSE    SSEConfig
	// streams counts this replica's open event streams (SSE.MaxStreams).
	streams streamCount
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
	// Branch names hold slashes ("feature/login"): a client escapes them in
	// a path segment (%2F), and routes match on the escaped path.
	r.UseRawPath = true
	r.HandleMethodNotAllowed = true
	// The client address of the rate limits is the connection's peer: no proxy
	// is trusted, so a made-up X-Forwarded-For cannot pick a fresh address.
	_ = r.SetTrustedProxies(nil) // nil never fails
	// observe outside Recovery: panics count as 500; the browser boundary before CORS and every route
	// A panic's answer is the ordinary 500 error body (gin's own Recovery answers with none).
	recovered := gin.CustomRecovery(func(c *gin.Context, v any) { writeError(c, fmt.Errorf("panic: %v", v)) })
	r.Use(s.observeRequests, recovered, s.accessLog(), s.h(s.browserBoundary), s.cors)
	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, healthResponse{Status: "ok"}) })
	r.GET("/readyz", s.ready)
	r.GET("/openapi.json", serveOpenAPI) // openapi.go
	s.mountDashboard(r)
	s.mountQueues(r)
	s.mountMetrics(r)
	v1 := r.Group("/v1", s.artifactKeyCookie, s.h(s.limitAuthFailures(s.authenticate)), s.h(s.rateLimit), s.h(validIDParam))
	v1.POST("/batches", s.h(s.readJSON("the batch")), s.h(s.createBatch))
	v1.GET("/batches", s.h(listQuery(batchStatuses)), s.h(s.listBatches))
	v1.GET("/batches/:id", s.loadBatch, s.h(s.getBatch))
	v1.GET("/batches/:id/jobs", s.h(listQuery(jobStatuses)), s.loadBatch, s.h(s.listJobs))
	v1.GET("/batches/:id/webhooks", s.loadBatch, s.h(s.listWebhooks))
	v1.GET("/batches/:id/archive", s.loadBatch, s.spend(jobs.WorkArchive), s.h(s.batchArchive))
	v1.POST("/batches/:id/cancel", s.loadBatch, s.h(s.cancelBatch))
	v1.GET("/batches/:id/events", s.loadBatch, s.h(s.batchEvents)) // events.go (takes its budget after the replica cap)
	v1.GET("/jobs/:id", s.loadJob, s.h(s.getJob))
	v1.POST("/capture", s.h(s.readJSON("the capture")), s.h(s.syncCapture)) // capture.go
	v1.GET("/artifacts/:id", s.loadArtifact, s.h(s.getArtifact))
	v1.GET("/artifacts/:id/thumbnail", s.loadArtifact, s.h(s.getThumbnail))
	v1.GET("/queues", s.h(s.listQueues)) // queues.go
	v1.GET("/key", s.h(s.getKey))        // key.go
	s.routeSuites(v1)                    // suites.go
	s.routeGroups(v1)                    // groups.go
	s.routeRules(v1)                     // rules.go
	s.routeAuthProfiles(v1)              // authprofiles.go
	s.routeSessions(v1)                  // sessions.go
	s.routeAdmin(r)                      // sweep.go: POST /v1/admin/sweep, with the admin token
	s.routeBrowserless(r)                // browserless.go: the Browserless-compatible endpoints
	s.routeMCP(r)                        // mcp.go: the MCP server
	r.NoRoute(s.h(func(c *gin.Context) error {
		return &apiError{Status: http.StatusNotFound, Code: "not_found", Message: "no such endpoint: " + c.Request.URL.Path}
	}))
	r.NoMethod(s.h(func(c *gin.Context) error {
		return &apiError{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed",
			Message: c.Request.Method + " is not allowed on " + c.Request.URL.Path}
	}))
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

// ready answers 200 when every check passes and 503 otherwise; its body is a
// probe report, not an error, so it is written here. It is anonymous, so each
// check reports only "ok" or "unavailable": the error (addresses, user names,
// driver messages) goes to the log.
func (s *Server) ready(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 3*time.Second)
	defer cancel()
	out := readyResponse{Status: "ready", Checks: map[string]string{}}
	for _, ch := range s.Checks {
		if err := ch.Ping(ctx); err != nil {
			out.Status = "unavailable"
			out.Checks[ch.Name] = "unavailable"
			s.logger().Warn("readiness check failed", "check", ch.Name, "err", err)
			continue
		}
		out.Checks[ch.Name] = "ok"
	}
	status := http.StatusOK
	if out.Status != "ready" {
		status = http.StatusServiceUnavailable
	}
	c.JSON(status, out)
}

func (s *Server) createBatch(c *gin.Context) error {
	idem := c.GetHeader("Idempotency-Key")
	if len(idem) > jobs.MaxIdempotencyKey {
		return badRequest("invalid_header", "Idempotency-Key", "must be at most 255 characters")
	}
	body, err := loaded[[]byte](c, bodyKey)
	if err != nil {
		return err
	}
	b, js, replayed, err := s.Service.Submit(c.Request.Context(), jobs.Submission{Body: body, Owner: owner(c), IdempotencyKey: idem})
	if err != nil {
		return err
	}
	if replayed {
		c.Header("Idempotent-Replayed", "true")
	}
	out := batchCreated{BatchView: b.View(), Jobs: make([]jobSummary, len(js))}
	for i, j := range js {
		out.Jobs[i] = jobSummary{ID: j.ID, URL: j.URL, Name: j.Name, Status: j.Status}
	}
	c.Header("Location", "/v1/batches/"+b.ID)
	c.JSON(http.StatusAccepted, out)
	return nil
}

func (s *Server) listBatches(c *gin.Context) error {
	q, err := loaded[listQueryParams](c, listKey)
	if err != nil {
		return err
	}
	bs, next, err := s.Batches.ListBatches(c.Request.Context(), s.listOwner(c), q.status, q.limit, q.cursor)
	if err != nil {
		return fmt.Errorf("list batches: %w", err)
	}
	out := batchList{Batches: make([]jobs.BatchView, len(bs)), NextCursor: nullable(next)}
	for i, b := range bs {
		out.Batches[i] = b.View()
	}
	c.JSON(http.StatusOK, out)
	return nil
}

func (s *Server) getBatch(c *gin.Context) error {
	b, err := loaded[*jobs.Batch](c, batchKey)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, b.View())
	return nil
}

func (s *Server) cancelBatch(c *gin.Context) error {
	b, err := loaded[*jobs.Batch](c, batchKey)
	if err != nil {
		return err
	}
	id := b.ID
	b, err = s.Service.Cancel(c.Request.Context(), id)
	if err != nil {
		return fmt.Errorf("batch %s: %w", id, err)
	}
	c.JSON(http.StatusOK, b.View())
	return nil
}

func (s *Server) listJobs(c *gin.Context) error {
	b, err := loaded[*jobs.Batch](c, batchKey)
	if err != nil {
		return err
	}
	q, err := loaded[listQueryParams](c, listKey)
	if err != nil {
		return err
	}
	js, next, err := s.Batches.ListJobs(c.Request.Context(), b.ID, jobs.JobStatus(q.status), q.limit, q.cursor)
	if err != nil {
		return fmt.Errorf("list jobs of batch %s: %w", b.ID, err)
	}
	ids := make([]string, len(js))
	for i, j := range js {
		ids[i] = j.ID
	}
	previews, err := s.Batches.FirstScreenshots(c.Request.Context(), ids)
	if err != nil {
		return fmt.Errorf("previews of batch %s: %w", b.ID, err)
	}
	base := s.baseURL(c)
	out := jobList{Jobs: make([]jobWithPreview, len(js)), NextCursor: nullable(next)}
	for i, j := range js {
		// The preview is the first screenshot, for thumbnails.
		out.Jobs[i] = jobWithPreview{jobView: newJobView(j), Preview: newImageRef(previews[j.ID], base)}
	}
	c.JSON(http.StatusOK, out)
	return nil
}

func (s *Server) getJob(c *gin.Context) error {
	j, err := loaded[*jobs.Job](c, jobKey)
	if err != nil {
		return err
	}
	out, _, err := s.jobWithArtifacts(c, j)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, out)
	return nil
}

// jobWithArtifacts is the view of GET /v1/jobs/:id, and the job's artifacts.
func (s *Server) jobWithArtifacts(c *gin.Context, j *jobs.Job) (jobWithArtifacts, []*jobs.Artifact, error) {
	arts, err := s.Batches.ListArtifacts(c.Request.Context(), j.ID)
	if err != nil {
		return jobWithArtifacts{}, nil, fmt.Errorf("artifacts of job %s: %w", j.ID, err)
	}
	base := s.baseURL(c)
	out := jobWithArtifacts{jobView: newJobView(j), Artifacts: make([]artifactView, len(arts))}
	for i, a := range arts {
		out.Artifacts[i] = artifactView{ID: a.ID, Kind: a.Kind, Name: a.Name, ContentType: a.ContentType, Bytes: a.Bytes,
			Width: a.Width, Height: a.Height, SHA256: a.SHA256, URL: base + "/v1/artifacts/" + a.ID}
	}
	return out, arts, nil
}

func (s *Server) getArtifact(c *gin.Context) error {
	a, err := loaded[*jobs.Artifact](c, artifactKey)
	if err != nil {
		return err
	}
	u, err := s.Presigner.PresignGetAs(c.Request.Context(), a.ObjectKey, a.Name, a.ContentType)
	if err != nil {
		return fmt.Errorf("presign artifact %s: %w", a.ID, err)
	}
	c.Header("Cache-Control", "no-store")
	c.Redirect(http.StatusFound, u)
	return nil
}

// ThumbnailReader finds an artifact's thumbnail. store.Store implements it.
type ThumbnailReader interface {
	// GetThumbnail returns jobs.ErrNotFound when the artifact has none.
	GetThumbnail(ctx context.Context, artifactID string) (*jobs.Thumbnail, error)
}

// getThumbnail redirects to the artifact's preview, like getArtifact.
func (s *Server) getThumbnail(c *gin.Context) error {
	a, err := loaded[*jobs.Artifact](c, artifactKey)
	if err != nil {
		return err
	}
	if s.Thumbnails == nil {
		return fmt.Errorf("artifact %s has no thumbnail: %w", a.ID, jobs.ErrNotFound)
	}
	t, err := s.Thumbnails.GetThumbnail(c.Request.Context(), a.ID)
	if err != nil {
		return fmt.Errorf("thumbnail of artifact %s: %w", a.ID, err)
	}
	u, err := s.Presigner.PresignGetAs(c.Request.Context(), t.ObjectKey, jobs.ThumbnailName(a.Name), t.ContentType)
	if err != nil {
		return fmt.Errorf("presign thumbnail of %s: %w", a.ID, err)
	}
	c.Header("Cache-Control", "no-store")
	c.Redirect(http.StatusFound, u)
	return nil
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

func itoa(n int) string { return strconv.Itoa(n) }
