package main

import (
	"errors"
	"fmt"
	"github.com/snapq/snapq/authprofile"
	"log/slog"
	"net/netip"
	"time"

	"github.com/hibiken/asynq"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/cmd/internal/env"
	"github.com/snapq/snapq/egress"
	"github.com/snapq/snapq/filterlist"
	"github.com/snapq/snapq/hotcopy"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/notify"
	"github.com/snapq/snapq/queue"
	"github.com/snapq/snapq/ratelimit"
	"github.com/snapq/snapq/regression"
	"github.com/snapq/snapq/session"
	"github.com/snapq/snapq/webhook"
)

// workerConfig is everything the worker reads from the environment. The
// table of docs/operating/configuration.md documents each variable and its default.
type workerConfig struct {
	LogLevel slog.Level // SNAPQ_LOG_LEVEL, default info
	// Sealer opens auth profiles' secrets and logins and seals new logins
	// (SNAPQ_SECRET_KEY, SNAPQ_SECRET_KEYS_OLD); nil: auth profiles are off.
	Sealer      *authprofile.Sealer
	DatabaseURL string             // SNAPQ_DATABASE_URL
	Redis       asynq.RedisConnOpt // SNAPQ_REDIS_URL
	S3          artifacts.Config   // SNAPQ_S3_*, SNAPQ_PRESIGN_EXPIRY

	// Concurrency is the browser tabs rendering at once
	// (SNAPQ_WORKER_CONCURRENCY, default 2, at most 64).
	Concurrency int
	// Jobs is the tasks in flight (SNAPQ_WORKER_JOBS, default 2 × Concurrency,
	// at least Concurrency): jobs beyond the tabs upload and write results
	// while the tabs render the next pages.
	Jobs int
	// InteractiveTabs of the Concurrency tabs are kept for the interactive
	// lane (SNAPQ_INTERACTIVE_TABS, default 0: the lane has its own queue and
	// task slots but shares the tabs; 0 to Concurrency-1). The worker serves the interactive queue with
	// max(1, 2 × InteractiveTabs) task slots of their own either way.
	InteractiveTabs int
	// InteractiveBrowserTabs is the tabs of the interactive lane's own Chromium
	// (SNAPQ_INTERACTIVE_BROWSER_TABS, default DefaultInteractiveBrowserTabs, 0 to 64):
	// synchronous captures then never share a Chromium's renderers, recycling or tab pool
	// with batches, and InteractiveTabs is not applied (the batch Chromium keeps all its
	// tabs). 0, or a remote browser pool: the lane uses the batch Chromium, where
	// InteractiveTabs reserves tabs.
	InteractiveBrowserTabs int
	// BatchChromeNice is the niceness the batch Chromium runs at
	// (SNAPQ_BATCH_CHROME_NICE, default DefaultBatchChromeNice, 0 to 19; capture/nice.go):
	// above the worker's, the api's and the lane's and sessions' Chromiums (0), so a
	// synchronous capture is not starved by batch rendering on a few cores.
	BatchChromeNice int
	// InteractivePoll is how often the interactive lane's asynq server looks
	// at its (usually empty) queue (SNAPQ_INTERACTIVE_POLL, default
	// DefaultInteractivePoll, 1ms to 1s): a synchronous capture waits about
	// half of it before a worker takes it, and each worker makes one small
	// Redis call per period while idle.
	InteractivePoll time.Duration
	// InteractiveCopyBytes is the most bytes of an interactive job's
	// artifacts the worker also keeps in Redis for a minute, so the api
	// answers the waiting caller without reading the bucket
	// (SNAPQ_INTERACTIVE_COPY_BYTES, default hotcopy.DefaultMaxBytes; 0: none).
	InteractiveCopyBytes int
	// InteractiveHostHeadroom is how many captures of a host an interactive
	// job may run above the host's cap (SNAPQ_INTERACTIVE_HOST_HEADROOM,
	// default jobs.DefaultInteractiveHostHeadroom, 0 to jobs.MaxInteractiveHostHeadroom).
	InteractiveHostHeadroom int
	// Sessions configures interactive sessions: SessionTabs (SNAPQ_SESSION_TABS, default
	// DefaultSessionTabs; 0: this worker holds none) tabs of a Chromium of their own, so
	// sessions and batches never take each other's tabs, and the commands' bounds
	// (SNAPQ_SESSION_REPLY_BYTES, SNAPQ_SESSION_COMMAND_TIMEOUT).
	SessionTabs int
	Sessions    session.RunConfig

	ShutdownTimeout time.Duration // SNAPQ_SHUTDOWN_TIMEOUT, default 30s
	RetryBaseDelay  time.Duration // SNAPQ_RETRY_BASE_DELAY, default 10s
	// Polling is SNAPQ_QUEUE_TASK_CHECK_INTERVAL and
	// SNAPQ_QUEUE_DELAYED_TASK_CHECK_INTERVAL (queue.DefaultPolling: asynq's
	// 1s and 5s), for tests and tuning.
	Polling queue.Polling
	// MaxRetry is for the capture jobs of scheduled runs (SNAPQ_MAX_RETRY,
	// default 3).
	MaxRetry int
	// Shards is SNAPQ_QUEUE_SHARDS (default 1, 8 on a Redis Cluster): the
	// worker serves every shard of every kind.
	Shards int
	// MaxJobsInFlight caps an API key's queued and running jobs; scheduled runs
	// over it are skipped (SNAPQ_MAX_JOBS_IN_FLIGHT, default 10000; 0: no cap).
	MaxJobsInFlight int
	// Budget is the per-key work budget's caps (env.Budget); the worker's scheduled
	// runs take the owner's discover slot before reading a sitemap or crawling, as the
	// api's runs do (a refused one is retried by the queue).
	Budget map[string]ratelimit.Cap

	// Webhook holds SNAPQ_WEBHOOK_MAX_RETRY and SNAPQ_WEBHOOK_TIMEOUT.
	Webhook webhook.Config
	// Capture holds SNAPQ_CHROME_BIN, SNAPQ_CHROME_URL (comma-separated
	// endpoints), SNAPQ_EGRESS_PROXY_LISTEN/ADVERTISE, SNAPQ_BROWSER_RECYCLE_AFTER,
	// SNAPQ_TAB_RECYCLE_AFTER, SNAPQ_CAPTURE_CALL_TIMEOUT, SNAPQ_CHROME_NO_SANDBOX,
	// SNAPQ_CHROME_USER, SNAPQ_CHROME_SITE_ISOLATION, and Concurrency as Tabs. Logger and Egress are left to the wiring.
	Capture capture.Config
	// EgressAllow is SNAPQ_EGRESS_ALLOW_CIDRS; Egress.Policy allows it.
	// Egress.Listen and Egress.Advertise are SNAPQ_EGRESS_PROXY_LISTEN and
	// SNAPQ_EGRESS_PROXY_ADVERTISE. The Logger is left to the wiring.
	EgressAllow []netip.Prefix
	Egress      egress.Config
	// FilterLists is SNAPQ_FILTER_LISTS: the filter lists behind block.ads,
	// block.trackers, block.chat_widgets, block.social and
	// block.cookie_banners (empty: the shipped lists; "off": none).
	FilterLists filterlist.Spec

	MetricsAddr string // SNAPQ_METRICS_ADDR; empty (default): metrics are not served
	PprofAddr   string // SNAPQ_PPROF_ADDR; empty (default): no profiler

	// DispatchDepth is as the api's (SNAPQ_DISPATCH_DEPTH, default 0:
	// derived from the workers).
	DispatchDepth int
	// HostConcurrency is the default cap on one target host's captures
	// across all workers (SNAPQ_HOST_CONCURRENCY, default 4; 0: no cap).
	HostConcurrency int
	// ContentAddressed stores artifacts by their SHA-256 under content/, once
	// per distinct bytes (SNAPQ_CONTENT_ADDRESSED, default true); false keeps
	// the per-attempt keys batches/<batch>/jobs/<job>/attempt-<n>/<name>.
	ContentAddressed bool
	// Thumbnails stores a 320 px JPEG preview of each job's first screenshot
	// and each diff (SNAPQ_THUMBNAILS, default true).
	Thumbnails bool
	// SMTP is the mail server of email notifications: SNAPQ_SMTP_ADDR
	// (host:port; unset: email is off), SNAPQ_SMTP_FROM, SNAPQ_SMTP_USERNAME,
	// SNAPQ_SMTP_PASSWORD and SNAPQ_SMTP_TLS (auto: STARTTLS when offered,
	// the default; starttls: required; tls: from the first byte);
	// SNAPQ_SMTP_ALLOWED_DOMAINS (the recipients' domains; empty: no mail),
	// SNAPQ_SMTP_MAX_PER_SUITE and SNAPQ_SMTP_MAX_PER_KEY (mails per hour).
	SMTP notify.SMTPConfig
	// PublicURL is the api's public base URL (SNAPQ_PUBLIC_URL), for links
	// in notifications of runs not started through the api (scheduled).
	PublicURL string
}

// loadWorkerConfig reads every SNAPQ_* variable the worker uses and validates
// them, returning one error that names each bad variable.
func loadWorkerConfig() (workerConfig, error) {
	var r env.Reader
	c := workerConfig{
		LogLevel:    env.LogLevel(&r),
		Sealer:      env.SecretSealer(&r),
		DatabaseURL: env.DatabaseURL(&r),
		Redis:       env.Redis(&r),
		S3:          env.S3(&r),
		Concurrency: r.Int("SNAPQ_WORKER_CONCURRENCY", 2),
	}
	c.Jobs = r.Int("SNAPQ_WORKER_JOBS", 2*c.Concurrency)
	c.InteractiveTabs = r.Int("SNAPQ_INTERACTIVE_TABS", 0)
	c.InteractiveBrowserTabs = r.Int("SNAPQ_INTERACTIVE_BROWSER_TABS", DefaultInteractiveBrowserTabs)
	c.BatchChromeNice = r.Int("SNAPQ_BATCH_CHROME_NICE", DefaultBatchChromeNice)
	c.InteractivePoll = r.Duration("SNAPQ_INTERACTIVE_POLL", DefaultInteractivePoll)
	c.InteractiveCopyBytes = r.Int("SNAPQ_INTERACTIVE_COPY_BYTES", hotcopy.DefaultMaxBytes)
	c.InteractiveHostHeadroom = r.Int("SNAPQ_INTERACTIVE_HOST_HEADROOM", jobs.DefaultInteractiveHostHeadroom)
	c.SessionTabs, c.Sessions = readSessions(&r)
	c.ShutdownTimeout = r.Duration("SNAPQ_SHUTDOWN_TIMEOUT", 30*time.Second)
	c.RetryBaseDelay = r.Duration("SNAPQ_RETRY_BASE_DELAY", 10*time.Second)
	c.Polling = readPolling(&r)
	c.MaxRetry = r.Int("SNAPQ_MAX_RETRY", 3)
	c.Shards = env.QueueShards(&r, c.Redis)
	c.MaxJobsInFlight = r.Int("SNAPQ_MAX_JOBS_IN_FLIGHT", jobs.DefaultMaxInFlight)
	c.Budget = env.Budget(&r)

	c.Webhook = webhook.DefaultConfig()
	c.Webhook.MaxRetry = r.Int("SNAPQ_WEBHOOK_MAX_RETRY", c.Webhook.MaxRetry)
	c.Webhook.Timeout = r.Duration("SNAPQ_WEBHOOK_TIMEOUT", c.Webhook.Timeout)

	c.readCapture(&r)
	allowErr := c.readEgress(&r)

	filterErr := c.readFilters(&r)
	c.ContentAddressed = r.Bool("SNAPQ_CONTENT_ADDRESSED", true)
	c.Thumbnails = r.Bool("SNAPQ_THUMBNAILS", true)

	smtp, mailErr := loadSMTP(&r)
	c.SMTP = smtp
	c.PublicURL = r.String("SNAPQ_PUBLIC_URL", "")

	c.MetricsAddr = r.String("SNAPQ_METRICS_ADDR", "")
	c.PprofAddr = r.String("SNAPQ_PPROF_ADDR", "")

	fairErr := c.readFairness(&r)
	if err := c.validate(fairErr, r.Err(), allowErr, mailErr, filterErr); err != nil {
		return workerConfig{}, err
	}
	return c, nil
}

// readFilters reads SNAPQ_FILTER_LISTS, the ad/tracker/chat filter lists.
func (c *workerConfig) readFilters(r *env.Reader) error {
	filters, err := filterlist.ParseSpec(r.String("SNAPQ_FILTER_LISTS", ""))
	if err != nil {
		return fmt.Errorf("SNAPQ_FILTER_LISTS: %w", err)
	}
	c.FilterLists = filters
	return nil
}

// readCapture reads the browser's variables (SNAPQ_CHROME_*, SNAPQ_*_RECYCLE_AFTER,
// SNAPQ_CAPTURE_CALL_TIMEOUT); its tabs are the worker's concurrency.
func (c *workerConfig) readCapture(r *env.Reader) {
	c.Capture = capture.DefaultConfig()
	c.Capture.ChromeBin = r.String("SNAPQ_CHROME_BIN", c.Capture.ChromeBin)
	c.Capture.RemoteURL = r.String("SNAPQ_CHROME_URL", "")
	c.Capture.Tabs = c.Concurrency
	if !c.laneOwnBrowser() {
		c.Capture.InteractiveTabs = c.InteractiveTabs
	}
	c.Capture.Nice = c.BatchChromeNice
	c.Capture.BrowserRecycleAfter = r.Int("SNAPQ_BROWSER_RECYCLE_AFTER", c.Capture.BrowserRecycleAfter)
	c.Capture.TabRecycleAfter = r.Int("SNAPQ_TAB_RECYCLE_AFTER", c.Capture.TabRecycleAfter)
	c.Capture.CallTimeout = r.Duration("SNAPQ_CAPTURE_CALL_TIMEOUT", c.Capture.CallTimeout)
	c.Capture.NoSandbox = r.Bool("SNAPQ_CHROME_NO_SANDBOX", false)
	c.Capture.ChromeUser = r.String("SNAPQ_CHROME_USER", c.Capture.ChromeUser)
	c.Capture.SiteIsolation = r.Bool("SNAPQ_CHROME_SITE_ISOLATION", c.Capture.SiteIsolation)
}

// readEgress reads SNAPQ_EGRESS_ALLOW_CIDRS and where the per-job proxies listen, and is
// the error of the CIDR list.
func (c *workerConfig) readEgress(r *env.Reader) error {
	allow, allowErr := egress.ParseCIDRs(r.String("SNAPQ_EGRESS_ALLOW_CIDRS", ""))
	if allowErr != nil {
		allowErr = fmt.Errorf("SNAPQ_EGRESS_ALLOW_CIDRS: %w", allowErr)
	}
	c.EgressAllow = allow
	c.Egress = egress.DefaultConfig()
	c.Egress.Policy = egress.NewPolicy(allow)
	// Where the per-job proxies listen, and the host a remote browser dials for them.
	c.Egress.Listen = r.String("SNAPQ_EGRESS_PROXY_LISTEN", egress.DefaultListen)
	c.Egress.Advertise = r.String("SNAPQ_EGRESS_PROXY_ADVERTISE", "")
	c.Capture.EgressListen, c.Capture.EgressAdvertise = c.Egress.Listen, c.Egress.Advertise
	return allowErr
}

// readFairness reads SNAPQ_DISPATCH_DEPTH and SNAPQ_HOST_CONCURRENCY and checks their range.
func (c *workerConfig) readFairness(r *env.Reader) error {
	c.DispatchDepth = r.Int("SNAPQ_DISPATCH_DEPTH", 0)
	c.HostConcurrency = r.Int("SNAPQ_HOST_CONCURRENCY", jobs.DefaultHostConcurrency)
	var fairErr error
	if c.DispatchDepth < 0 {
		fairErr = fmt.Errorf("SNAPQ_DISPATCH_DEPTH=%d: want 0 (derived from the workers) or more", c.DispatchDepth)
	}
	if c.HostConcurrency < 0 || c.HostConcurrency > jobs.HardMaxHostConcurrency {
		fairErr = errors.Join(fairErr, fmt.Errorf("SNAPQ_HOST_CONCURRENCY=%d: want 0 (no cap) to %d", c.HostConcurrency, jobs.HardMaxHostConcurrency))
	}
	return fairErr
}

// validate checks the concurrency, the sessions, storage, the browser, the proxies, the
// webhooks and mail, and joins their errors with the readers' (read), each bad variable
// named once.
func (c *workerConfig) validate(read ...error) error {
	concErr := c.validateConcurrency()
	cc := c.Capture
	// The proxies' listen address is Egress's to report (one line per variable).
	cc.EgressListen, cc.EgressAdvertise = "", ""
	if concErr != nil {
		// Tabs is SNAPQ_WORKER_CONCURRENCY, reported already: not twice.
		cc.Tabs = 0 // Validate reads 0 as the default
		cc.InteractiveTabs = 0
		cc.Nice = 0 // SNAPQ_BATCH_CHROME_NICE, likewise
	}
	egressErr := c.Egress.Validate()
	if egressErr != nil {
		egressErr = fmt.Errorf("SNAPQ_EGRESS_PROXY_LISTEN=%s, SNAPQ_EGRESS_PROXY_ADVERTISE=%s: %w", c.Egress.Listen, c.Egress.Advertise, egressErr)
	}
	errs := append([]error{concErr, c.validateSessions(), c.Polling.Validate()}, read...)
	return errors.Join(append(errs, c.S3.Validate(), cc.Validate(), egressErr, c.Webhook.Validate(), c.SMTP.Validate())...)
}

// readSessions reads SNAPQ_SESSION_TABS, SNAPQ_SESSION_REPLY_BYTES and
// SNAPQ_SESSION_COMMAND_TIMEOUT.
func readSessions(r *env.Reader) (int, session.RunConfig) {
	return r.Int("SNAPQ_SESSION_TABS", DefaultSessionTabs), session.RunConfig{
		ReplyBytes:     r.Int("SNAPQ_SESSION_REPLY_BYTES", session.DefaultReplyBytes),
		CommandTimeout: r.Duration("SNAPQ_SESSION_COMMAND_TIMEOUT", session.DefaultCommandTimeout)}
}

// readPolling reads how often the asynq servers look for tasks (for tests and tuning).
func readPolling(r *env.Reader) queue.Polling {
	p := queue.DefaultPolling()
	return queue.Polling{
		TaskCheck:        r.Duration("SNAPQ_QUEUE_TASK_CHECK_INTERVAL", p.TaskCheck),
		DelayedTaskCheck: r.Duration("SNAPQ_QUEUE_DELAYED_TASK_CHECK_INTERVAL", p.DelayedTaskCheck),
	}
}

// DefaultSessionTabs is SNAPQ_SESSION_TABS's default.
const DefaultSessionTabs = 2

// validateSessions checks the session variables.
func (c workerConfig) validateSessions() error {
	if c.SessionTabs < 0 || c.SessionTabs > 64 {
		return fmt.Errorf("SNAPQ_SESSION_TABS=%d: want 0 to 64", c.SessionTabs)
	}
	if c.Sessions.ReplyBytes < 1024 || c.Sessions.ReplyBytes > 4<<20 {
		return fmt.Errorf("SNAPQ_SESSION_REPLY_BYTES=%d: want 1024 to 4194304", c.Sessions.ReplyBytes)
	}
	if c.Sessions.CommandTimeout <= 0 || c.Sessions.CommandTimeout > 50*time.Second {
		return fmt.Errorf("SNAPQ_SESSION_COMMAND_TIMEOUT=%s: want more than 0 and at most 50s (the api waits 5 s longer, under its 1m write timeout)", c.Sessions.CommandTimeout)
	}
	return nil
}

// validateConcurrency checks SNAPQ_WORKER_CONCURRENCY and, when that is
// usable, SNAPQ_WORKER_JOBS against it.
func (c workerConfig) validateConcurrency() error {
	if c.Concurrency < 1 || c.Concurrency > 64 {
		return fmt.Errorf("SNAPQ_WORKER_CONCURRENCY=%d: want 1 to 64", c.Concurrency)
	}
	if c.Jobs < c.Concurrency {
		return fmt.Errorf("SNAPQ_WORKER_JOBS=%d: want at least SNAPQ_WORKER_CONCURRENCY (%d)", c.Jobs, c.Concurrency)
	}
	if c.InteractiveTabs < 0 || c.InteractiveTabs >= c.Concurrency && c.InteractiveTabs > 0 {
		return fmt.Errorf("SNAPQ_INTERACTIVE_TABS=%d: want 0 to SNAPQ_WORKER_CONCURRENCY-1 (%d)", c.InteractiveTabs, c.Concurrency-1)
	}
	if c.InteractiveBrowserTabs < 0 || c.InteractiveBrowserTabs > 64 {
		return fmt.Errorf("SNAPQ_INTERACTIVE_BROWSER_TABS=%d: want 0 to 64", c.InteractiveBrowserTabs)
	}
	if c.BatchChromeNice < 0 || c.BatchChromeNice > capture.MaxNice {
		return fmt.Errorf("SNAPQ_BATCH_CHROME_NICE=%d: want 0 to %d", c.BatchChromeNice, capture.MaxNice)
	}
	if c.InteractivePoll < time.Millisecond || c.InteractivePoll > time.Second {
		return fmt.Errorf("SNAPQ_INTERACTIVE_POLL=%s: want 1ms to 1s", c.InteractivePoll)
	}
	if c.InteractiveCopyBytes < 0 || c.InteractiveCopyBytes > hotcopy.HardMaxBytes {
		return fmt.Errorf("SNAPQ_INTERACTIVE_COPY_BYTES=%d: want 0 to %d", c.InteractiveCopyBytes, hotcopy.HardMaxBytes)
	}
	if c.InteractiveHostHeadroom < 0 || c.InteractiveHostHeadroom > jobs.MaxInteractiveHostHeadroom {
		return fmt.Errorf("SNAPQ_INTERACTIVE_HOST_HEADROOM=%d: want 0 to %d", c.InteractiveHostHeadroom, jobs.MaxInteractiveHostHeadroom)
	}
	return nil
}

// DefaultInteractiveBrowserTabs is SNAPQ_INTERACTIVE_BROWSER_TABS's default: two
// synchronous captures at once per worker in the lane's own Chromium.
const DefaultInteractiveBrowserTabs = 2

// DefaultBatchChromeNice is SNAPQ_BATCH_CHROME_NICE's default.
const DefaultBatchChromeNice = 10

// laneOwnBrowser reports whether the interactive lane has a Chromium of its own.
func (c workerConfig) laneOwnBrowser() bool {
	return c.InteractiveBrowserTabs > 0 && c.Capture.RemoteURL == ""
}

// laneTabs is the tabs interactive captures may use at once: the lane's own
// Chromium's, else the batch Chromium's reserved ones (SNAPQ_INTERACTIVE_TABS).
func (c workerConfig) laneTabs() int {
	if c.laneOwnBrowser() {
		return c.InteractiveBrowserTabs
	}
	return c.InteractiveTabs
}

// DefaultInteractivePoll is SNAPQ_INTERACTIVE_POLL's default: about 10 ms
// of waiting for a synchronous capture, 50 small Redis calls a second per
// idle worker.
const DefaultInteractivePoll = 20 * time.Millisecond

// longestJob is the longest a capture job can hold a tab: the largest timeout_ms
// the API accepts plus the capture's grace period to take its outputs.
var longestJob = jobs.MaxJobTimeout + capture.CaptureGrace(jobs.MaxJobTimeout)

// drainWarning says what a SIGTERM does to long jobs when SNAPQ_SHUTDOWN_TIMEOUT
// is shorter than longestJob, or is "" when every job can finish while draining.
func (c workerConfig) drainWarning() string {
	if c.ShutdownTimeout >= longestJob {
		return ""
	}
	return fmt.Sprintf("SNAPQ_SHUTDOWN_TIMEOUT=%s is shorter than the longest job (%s): on SIGTERM, jobs still running after it "+
		"are handed back and retried elsewhere (one more attempt each); set it to %s or more to drain every job", c.ShutdownTimeout, longestJob, longestJob)
}

// loadSMTP reads the mail server of email notifications (SNAPQ_SMTP_*).
func loadSMTP(r *env.Reader) (notify.SMTPConfig, error) {
	c := notify.SMTPConfig{Addr: r.String("SNAPQ_SMTP_ADDR", ""), From: r.String("SNAPQ_SMTP_FROM", ""),
		Username: r.Secret("SNAPQ_SMTP_USERNAME", ""), Password: r.Secret("SNAPQ_SMTP_PASSWORD", ""),
		TLS:         r.String("SNAPQ_SMTP_TLS", notify.SMTPAuto),
		MaxPerSuite: r.Int("SNAPQ_SMTP_MAX_PER_SUITE", notify.DefaultMaxPerSuite),
		MaxPerKey:   r.Int("SNAPQ_SMTP_MAX_PER_KEY", notify.DefaultMaxPerKey)}
	domains, err := regression.ParseMailDomains(r.String("SNAPQ_SMTP_ALLOWED_DOMAINS", ""))
	c.AllowedDomains = domains
	return c, err
}
