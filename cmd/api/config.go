package main

import (
	"errors"
	"fmt"
	"github.com/snapq/snapq/authprofile"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/cmd/internal/env"
	"github.com/snapq/snapq/discover"
	"github.com/snapq/snapq/egress"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/maintenance"
	"github.com/snapq/snapq/queue"
	"github.com/snapq/snapq/ratelimit"
	"github.com/snapq/snapq/regression"
	"github.com/snapq/snapq/session"
	"github.com/snapq/snapq/web"
	"github.com/snapq/snapq/webhook"
)

// Values of SNAPQ_AUTH.
const (
	authOn  = "on"
	authOff = "off"
)

// Values of SNAPQ_ADMIN_QUEUES.
const (
	queuesReadOnly = "readonly"
	queuesOn       = "on"
	queuesOff      = "off"
)

// apiConfig is everything `api serve` reads from the environment. The
// table of docs/operating/configuration.md documents each variable and its default.
type apiConfig struct {
	LogLevel slog.Level // SNAPQ_LOG_LEVEL, default info
	// Sealer encrypts auth profiles' secrets and logins (SNAPQ_SECRET_KEY,
	// SNAPQ_SECRET_KEYS_OLD); nil: auth profiles are off.
	Sealer      *authprofile.Sealer
	Addr        string             // SNAPQ_HTTP_ADDR, default 127.0.0.1:8080
	DatabaseURL string             // SNAPQ_DATABASE_URL
	Redis       asynq.RedisConnOpt // SNAPQ_REDIS_URL
	S3          artifacts.Config   // SNAPQ_S3_*, SNAPQ_PRESIGN_EXPIRY

	// Queue holds SNAPQ_MAX_RETRY (default 3), SNAPQ_WEBHOOK_MAX_RETRY
	// (default 8) and SNAPQ_QUEUE_SHARDS (default 1, 8 on a Redis Cluster), for
	// the tasks the api and its reconciler enqueue.
	Queue queue.Config

	ReconcileInterval time.Duration // SNAPQ_RECONCILE_INTERVAL, default 1m
	ReconcileGrace    time.Duration // SNAPQ_RECONCILE_GRACE, default 30s
	ScheduleSync      time.Duration // SNAPQ_SCHEDULE_SYNC, default 30s
	// SweepInterval is the time between two maintenance passes (retention,
	// the orphan sweep, the missing-object check), run as an asynq periodic
	// task by one worker per interval whatever the api replicas
	// (SNAPQ_SWEEP_INTERVAL, default 10m; 0 turns the periodic pass off,
	// POST /v1/admin/sweep still runs one).
	SweepInterval time.Duration
	// SweepGrace is the age below which the sweep and retention never delete
	// an object (SNAPQ_SWEEP_GRACE, default 1h).
	SweepGrace time.Duration
	// SweepDryRun makes the orphan sweep and retention log what they would
	// delete and delete nothing (SNAPQ_SWEEP_DRY_RUN, default false).
	SweepDryRun bool
	// RetentionDays is the default retention of batches and runs whose key
	// and suite set none (SNAPQ_RETENTION_DAYS, default 0: keep forever).
	RetentionDays int
	// BranchBaselineDays is how long a branch's baselines outlive its last
	// run or approval when its suite sets no branch_baseline_days
	// (SNAPQ_BRANCH_BASELINE_DAYS, default 30; 0: never expire). The
	// maintenance pass deletes them; main-branch baselines never expire.
	BranchBaselineDays int

	// Auth is SNAPQ_AUTH as given: on (default) or off. Web.Auth is true
	// unless it is off.
	Auth string
	// Web holds SNAPQ_MAX_BODY_BYTES (default 1 MiB), SNAPQ_PUBLIC_URL,
	// SNAPQ_CORS_ORIGINS and SNAPQ_ALLOWED_HOSTS (comma-separated), Auth, and
	// Addr as ListenAddr (for the Host check).
	Web web.Config

	RateLimit float64 // SNAPQ_RATE_LIMIT, requests per second, default 10; 0 disables
	RateBurst int     // SNAPQ_RATE_BURST, default 20
	// AuthFailureRate is failed authentications per second per client
	// address (SNAPQ_AUTH_FAILURE_RATE, default 0.1, one per 10 s; 0 disables)
	// after a burst of AuthFailureBurst (SNAPQ_AUTH_FAILURE_BURST, default 10).
	AuthFailureRate  float64
	AuthFailureBurst int
	MaxTargets       int // SNAPQ_MAX_TARGETS, default jobs.MaxTargets (1000)
	MaxJobsInFlight  int // SNAPQ_MAX_JOBS_IN_FLIGHT, default 10000; 0: no cap
	// SessionsPerKey caps one key's open interactive sessions (SNAPQ_SESSIONS_PER_KEY,
	// default session.DefaultPerKey; they also count in MaxJobsInFlight).
	SessionsPerKey int
	// MaxSuitesPerKey caps one key's suites (SNAPQ_MAX_SUITES_PER_KEY, default 100; 0: no cap).
	MaxSuitesPerKey int
	// MinScheduleInterval is the shortest gap allowed between a schedule's
	// runs (SNAPQ_MIN_SCHEDULE_INTERVAL, default 5m).
	MinScheduleInterval time.Duration

	AdminQueues string // SNAPQ_ADMIN_QUEUES: readonly (default), on or off
	// Web.AdminToken is SNAPQ_ADMIN_TOKEN: the only credential the queue UI
	// takes with auth on (at least 24 characters; empty: the UI is closed).
	Metrics string // SNAPQ_METRICS: web.MetricsOn (default), MetricsOff or MetricsPublic

	// DispatchDepth is the dispatched, unfinished capture jobs the
	// dispatcher keeps (SNAPQ_DISPATCH_DEPTH, default 0: derived from the
	// workers' concurrency, jobs.FleetDepth).
	DispatchDepth int
	// HostConcurrencyMax caps the host_concurrency option
	// (SNAPQ_HOST_CONCURRENCY_MAX, default 16).
	HostConcurrencyMax int

	// SSE holds SNAPQ_SSE_MAX_STREAMS (default 1000), SNAPQ_SSE_MAX_DURATION
	// (default 30m) and SNAPQ_SSE_HEARTBEAT (default 15s): the live event streams.
	SSE web.SSEConfig

	// EgressAllow is SNAPQ_EGRESS_ALLOW_CIDRS (as the worker reads it): the api fetches
	// batch sitemaps through the same egress guard as the workers' browsers.
	EgressAllow []netip.Prefix
	// SitemapTimeout bounds reading one batch's sitemaps (SNAPQ_SITEMAP_TIMEOUT, default 30s).
	SitemapTimeout time.Duration
	// MailDomains is SNAPQ_SMTP_ALLOWED_DOMAINS (as the worker reads it):
	// the domains a suite's email channel may list; empty: no email channel.
	MailDomains regression.MailDomains
	// Budget holds the per-key work budget's caps per kind of work (env.Budget:
	// SNAPQ_BUDGET_*_PER_KEY, SNAPQ_BUDGET_*_PER_REPLICA, SNAPQ_SSE_MAX_STREAMS_PER_KEY).
	Budget map[string]ratelimit.Cap
	// MaxAuthProfilesPerKey caps one key's auth profiles
	// (SNAPQ_MAX_AUTH_PROFILES_PER_KEY, default 50; 0: no cap).
	MaxAuthProfilesPerKey int
}

// loadAPIConfig reads every SNAPQ_* variable `api serve` uses and validates
// them, returning one error that names each bad variable.
func loadAPIConfig() (apiConfig, error) {
	var r env.Reader
	c := apiConfig{
		LogLevel:    env.LogLevel(&r),
		Sealer:      env.SecretSealer(&r),
		Addr:        r.String("SNAPQ_HTTP_ADDR", "127.0.0.1:8080"),
		DatabaseURL: env.DatabaseURL(&r),
		Redis:       env.Redis(&r),
		S3:          env.S3(&r),
		Queue: queue.Config{
			MaxRetry:        r.Int("SNAPQ_MAX_RETRY", 3),
			WebhookMaxRetry: r.Int("SNAPQ_WEBHOOK_MAX_RETRY", webhook.DefaultMaxRetry),
		},
	}
	c.readMaintenance(&r)
	c.Web = readWeb(&r)
	c.readLimits(&r)
	c.Queue.Shards = env.QueueShards(&r, c.Redis)
	c.Web.Auth = c.Auth != authOff
	c.Web.ListenAddr = c.Addr
	c.DispatchDepth = r.Int("SNAPQ_DISPATCH_DEPTH", 0)
	c.HostConcurrencyMax = r.Int("SNAPQ_HOST_CONCURRENCY_MAX", jobs.DefaultHostConcurrencyMax)
	c.SSE = web.SSEConfig{
		MaxStreams:  r.Int("SNAPQ_SSE_MAX_STREAMS", web.DefaultSSEMaxStreams),
		MaxDuration: r.Duration("SNAPQ_SSE_MAX_DURATION", web.DefaultSSEMaxDuration),
		Heartbeat:   r.Duration("SNAPQ_SSE_HEARTBEAT", web.DefaultSSEHeartbeat),
	}
	allowErr, sitemapErr := c.readOutbound(&r)
	c.Budget = env.Budget(&r)
	c.MaxAuthProfilesPerKey = r.Int("SNAPQ_MAX_AUTH_PROFILES_PER_KEY", authprofile.DefaultMaxPerKey)
	mailDomains, mailErr := regression.ParseMailDomains(r.String("SNAPQ_SMTP_ALLOWED_DOMAINS", ""))
	c.MailDomains = mailDomains
	if err := errors.Join(r.Err(), allowErr, sitemapErr, mailErr, c.validate(), c.validateFair(), c.SSE.Validate()); err != nil {
		return apiConfig{}, err
	}
	return c, nil
}

// readMaintenance reads the periodic loops' variables (reconciler, schedules, sweep,
// retention) and SNAPQ_AUTH.
func (c *apiConfig) readMaintenance(r *env.Reader) {
	c.ReconcileInterval = r.Duration("SNAPQ_RECONCILE_INTERVAL", time.Minute)
	c.ReconcileGrace = r.Duration("SNAPQ_RECONCILE_GRACE", 30*time.Second)
	c.ScheduleSync = r.Duration("SNAPQ_SCHEDULE_SYNC", 30*time.Second)
	c.SweepInterval = r.Duration("SNAPQ_SWEEP_INTERVAL", maintenance.DefaultSweepInterval)
	c.SweepGrace = r.Duration("SNAPQ_SWEEP_GRACE", maintenance.DefaultSweepGrace)
	c.SweepDryRun = r.Bool("SNAPQ_SWEEP_DRY_RUN", false)
	c.RetentionDays = r.Int("SNAPQ_RETENTION_DAYS", 0)
	c.BranchBaselineDays = r.Int("SNAPQ_BRANCH_BASELINE_DAYS", regression.DefaultBranchBaselineDays)
	c.Auth = r.String("SNAPQ_AUTH", authOn)
}

// readWeb reads the HTTP server's variables.
func readWeb(r *env.Reader) web.Config {
	return web.Config{
		MaxBodyBytes:      int64(r.Int("SNAPQ_MAX_BODY_BYTES", 1<<20)),
		PublicURL:         r.String("SNAPQ_PUBLIC_URL", ""),
		CORSOrigins:       splitList(r.String("SNAPQ_CORS_ORIGINS", "")),
		AllowedHosts:      splitList(r.String("SNAPQ_ALLOWED_HOSTS", "")),
		AdminToken:        r.Secret("SNAPQ_ADMIN_TOKEN", ""),
		BrowserlessPrefix: browserlessPrefix(r.String("SNAPQ_BROWSERLESS_PREFIX", web.DefaultBrowserlessPrefix)),
	}
}

// readLimits reads the rate limits, the per-key caps, and the admin surfaces' modes.
func (c *apiConfig) readLimits(r *env.Reader) {
	c.RateLimit = r.Float("SNAPQ_RATE_LIMIT", 10)
	c.RateBurst = r.Int("SNAPQ_RATE_BURST", 20)
	c.AuthFailureRate = r.Float("SNAPQ_AUTH_FAILURE_RATE", 0.1)
	c.AuthFailureBurst = r.Int("SNAPQ_AUTH_FAILURE_BURST", 10)
	c.MaxTargets = r.Int("SNAPQ_MAX_TARGETS", jobs.MaxTargets)
	c.MaxJobsInFlight = r.Int("SNAPQ_MAX_JOBS_IN_FLIGHT", jobs.DefaultMaxInFlight)
	c.SessionsPerKey = r.Int("SNAPQ_SESSIONS_PER_KEY", session.DefaultPerKey)
	c.MaxSuitesPerKey = r.Int("SNAPQ_MAX_SUITES_PER_KEY", regression.DefaultMaxSuitesPerKey)
	c.MinScheduleInterval = r.Duration("SNAPQ_MIN_SCHEDULE_INTERVAL", regression.DefaultMinScheduleInterval)
	c.AdminQueues = r.String("SNAPQ_ADMIN_QUEUES", queuesReadOnly)
	c.Metrics = r.String("SNAPQ_METRICS", web.MetricsOn)
}

// readOutbound reads SNAPQ_EGRESS_ALLOW_CIDRS and SNAPQ_SITEMAP_TIMEOUT, and is their errors.
func (c *apiConfig) readOutbound(r *env.Reader) (allowErr, sitemapErr error) {
	allow, allowErr := egress.ParseCIDRs(r.String("SNAPQ_EGRESS_ALLOW_CIDRS", ""))
	if allowErr != nil {
		allowErr = fmt.Errorf("SNAPQ_EGRESS_ALLOW_CIDRS: %w", allowErr)
	}
	c.EgressAllow = allow
	c.SitemapTimeout = r.Duration("SNAPQ_SITEMAP_TIMEOUT", discover.DefaultTimeout)
	if c.SitemapTimeout <= 0 || c.SitemapTimeout > 50*time.Second {
		sitemapErr = fmt.Errorf("SNAPQ_SITEMAP_TIMEOUT=%s: want more than 0 and at most 50s (under the server's 1m write timeout)", c.SitemapTimeout)
	}
	return allowErr, sitemapErr
}

// validate reports the values that parsed but cannot be used.
func (c apiConfig) validate() error {
	var authErr error
	if c.Auth != authOn && c.Auth != authOff {
		authErr = fmt.Errorf("SNAPQ_AUTH=%q: want on or off", c.Auth)
	} else if c.Auth == authOff && !loopback(c.Addr) {
		authErr = fmt.Errorf("SNAPQ_AUTH=off is only allowed when SNAPQ_HTTP_ADDR listens on loopback (it is %s): create keys with `api keys create --name NAME` instead", c.Addr)
	}
	var queuesErr error
	if c.AdminQueues != queuesReadOnly && c.AdminQueues != queuesOn && c.AdminQueues != queuesOff {
		queuesErr = fmt.Errorf("SNAPQ_ADMIN_QUEUES=%q: want readonly, on or off", c.AdminQueues)
	}
	_, metricsErr := web.ParseMetricsMode(c.Metrics)
	var sweepErr error
	if c.SweepInterval < 0 {
		sweepErr = fmt.Errorf("SNAPQ_SWEEP_INTERVAL=%s: want a positive duration, or 0 to turn sweeping off", c.SweepInterval)
	}
	if c.SweepGrace <= 0 {
		sweepErr = errors.Join(sweepErr, fmt.Errorf("SNAPQ_SWEEP_GRACE=%s: want a positive duration", c.SweepGrace))
	}
	if c.RetentionDays < 0 || c.RetentionDays > maintenance.MaxRetentionDays {
		sweepErr = errors.Join(sweepErr, fmt.Errorf("SNAPQ_RETENTION_DAYS=%d: want 0 (keep forever) to %d days", c.RetentionDays, maintenance.MaxRetentionDays))
	}
	if c.BranchBaselineDays < 0 || c.BranchBaselineDays > maintenance.MaxRetentionDays {
		sweepErr = errors.Join(sweepErr, fmt.Errorf("SNAPQ_BRANCH_BASELINE_DAYS=%d: want 0 (never expire) to %d days", c.BranchBaselineDays, maintenance.MaxRetentionDays))
	}
	var tokenErr error
	if t := c.Web.AdminToken; t != "" && (len(t) < 24 || strings.TrimSpace(t) != t) {
		tokenErr = fmt.Errorf("SNAPQ_ADMIN_TOKEN: want at least 24 characters without surrounding spaces (e.g. openssl rand -hex 24)")
	}
	return errors.Join(authErr, queuesErr, metricsErr, sweepErr, tokenErr, web.ValidBrowserlessPrefix(c.Web.BrowserlessPrefix), c.S3.Validate())
}

// browserlessPrefix reads SNAPQ_BROWSERLESS_PREFIX: "off" (or empty) mounts
// no Browserless-compatible endpoints.
func browserlessPrefix(v string) string {
	if v == "off" {
		return ""
	}
	return strings.TrimSuffix(v, "/")
}

// loadDatabaseURL reads SNAPQ_DATABASE_URL alone, for the commands that only
// need Postgres (`api migrate`, `api keys`): they run without S3 settings.
func loadDatabaseURL() (string, error) {
	var r env.Reader
	u := env.DatabaseURL(&r)
	return u, r.Err()
}

// loopback reports whether a listen address only accepts local connections.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// splitList splits a comma-separated variable, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// noCapAsNegative turns a limit's "0: no cap" (how SNAPQ_* limits read) into
// the regression service's "negative: no cap" (its 0 takes the default).
func noCapAsNegative(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// validateFair checks SNAPQ_DISPATCH_DEPTH and SNAPQ_HOST_CONCURRENCY_MAX.
func (c apiConfig) validateFair() error {
	var errs []error
	if c.DispatchDepth < 0 {
		errs = append(errs, fmt.Errorf("SNAPQ_DISPATCH_DEPTH=%d: want 0 (derived from the workers) or more", c.DispatchDepth))
	}
	if c.HostConcurrencyMax < 1 || c.HostConcurrencyMax > jobs.HardMaxHostConcurrency {
		errs = append(errs, fmt.Errorf("SNAPQ_HOST_CONCURRENCY_MAX=%d: want 1 to %d", c.HostConcurrencyMax, jobs.HardMaxHostConcurrency))
	}
	return errors.Join(errs...)
}
