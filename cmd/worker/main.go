// Command worker runs capture tasks: one Chromium per process, driven by
// go-rod, artifacts uploaded to S3, results written to Postgres.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/snapq/snapq/authprofile"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/capture/markup"
	"github.com/snapq/snapq/cmd/internal/env"
	"github.com/snapq/snapq/cmd/internal/harden"
	"github.com/snapq/snapq/discover"
	"github.com/snapq/snapq/egress"
	"github.com/snapq/snapq/events"
	"github.com/snapq/snapq/filterlist"
	"github.com/snapq/snapq/hotcopy"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/maintenance"
	"github.com/snapq/snapq/notify"
	"github.com/snapq/snapq/queue"
	"github.com/snapq/snapq/ratelimit"
	"github.com/snapq/snapq/regression"
	"github.com/snapq/snapq/session"
	"github.com/snapq/snapq/sessionbus"
	"github.com/snapq/snapq/store"
	"github.com/snapq/snapq/webhook"
)

func main() {
	// First of all: no process of this uid (Chromium's, in a container) reads
	// the credentials in this process's environment or memory (harden's doc).
	if err := harden.NotDumpable(); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
	// The first SIGTERM or SIGINT drains; a second one hands the running jobs
	// back to the queue at once.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	now := make(chan struct{})
	go func() {
		<-sigs
		stop()
		<-sigs
		close(now)
	}()
	if err := run(ctx, now); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

// run works on tasks until ctx ends, then stops taking new ones and gives
// running jobs SNAPQ_SHUTDOWN_TIMEOUT to finish; past that bound, or as soon
// as now is closed, it hands the rest back to the queue (another worker runs
// them, without a retry counted) and returns.
func run(ctx context.Context, now <-chan struct{}) error {
	cfg, err := loadWorkerConfig()
	if err != nil {
		return err
	}
	log := env.Logger(cfg.LogLevel, "worker")
	if w := cfg.drainWarning(); w != "" {
		log.Warn(w)
	}
	d, err := openDeps(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer d.close()
	metrics := newWorkerMetrics() // counted always, served only with SNAPQ_METRICS_ADDR
	metrics.registry.MustRegister(d.events.Collectors()...)
	metricsLn, err := listenMetrics(cfg)
	if err != nil {
		return err
	}
	if metricsLn != nil {
		defer metricsLn.Close()
	}
	srv, lane, err := startServers(cfg, newMux(cfg, d, metrics, log), log)
	if err != nil {
		return err
	}
	dctx, stopDispatch := context.WithCancel(context.WithoutCancel(ctx))
	defer stopDispatch()
	sessionsDone := serveSessions(ctx, cfg, d, metrics, log)
	go d.dispatch.Run(dctx)
	if metricsLn != nil {
		go metrics.serve(ctx, metricsLn, log)
	}
	if cfg.PprofAddr != "" {
		go servePprof(cfg.PprofAddr, log)
	}
	log.Info("worker started", "egress_allow", cfg.EgressAllow, "tabs", cfg.Concurrency, "jobs", cfg.Jobs, "chrome", cfg.Capture.ChromeBin,
		"chrome_url", cfg.Capture.RemoteURL, "egress_proxy_listen", cfg.Egress.Listen, "pdf_reader", capture.PDFReader())
	<-ctx.Done()
	stopAll(cfg, now, sessionsDone, srv, lane, log)
	return nil
}

// stopAll drains in two stages: the sessions' tabs are closed (reason worker_shutdown) and
// running jobs finish, within SNAPQ_SHUTDOWN_TIMEOUT or until now is closed; then the
// rest is handed back to the queue.
func stopAll(cfg workerConfig, now <-chan struct{}, sessionsDone <-chan struct{}, srv, lane *queue.Server, log *slog.Logger) {
	log.Info("shutting down: finishing running jobs (a second signal hands them back to the queue)", "timeout", cfg.ShutdownTimeout)
	drain, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	go func() {
		select {
		case <-now:
			log.Warn("second signal: handing running jobs back to the queue")
			cancel()
		case <-drain.Done():
		}
	}()
	select {
	case <-sessionsDone:
	case <-drain.Done():
	}
	if !drainBoth(drain, srv, lane) {
		log.Warn("jobs still running at shutdown: handed back to the queue")
	}
	// The interrupted handlers record their attempts within the bookkeeping bound.
	srv.Shutdown(jobs.BookkeepingTimeout)
	lane.Shutdown(jobs.BookkeepingTimeout)
	log.Info("worker stopped")
}

// deps are the worker's connections and its browser.
type deps struct {
	store   *store.Store
	objects *artifacts.Store
	guard   *egress.Proxy
	browser *capture.Browser
	tasks   *queue.AsynqQueue
	// rdb holds the host cap's semaphores; dispatch feeds the queue from the
	// held jobs (kicked when a job here reaches its final status).
	rdb      redis.UniversalClient
	hosts    *ratelimit.HostSemaphore
	dispatch *jobs.Dispatcher
	events   *events.Publisher // live events, counted in metrics
	// sessionBrowser holds the interactive sessions' tabs (SNAPQ_SESSION_TABS); nil: none.
	sessionBrowser *capture.Browser
	// laneBrowser renders the interactive lane's captures (SNAPQ_INTERACTIVE_BROWSER_TABS);
	// nil: they share browser.
	laneBrowser *capture.Browser
}

// renderer runs interactive captures on the lane's Chromium, the rest on the batch one.
func (d *deps) renderer() capture.Lanes {
	return capture.Lanes{Batch: d.browser, Interactive: d.laneBrowser}
}

// startLaneBrowser starts the interactive lane's own Chromium (at once, so the first
// synchronous capture does not wait for a launch), or returns nil when the lane shares the
// batch Chromium.
func startLaneBrowser(ctx context.Context, cfg workerConfig, ccfg capture.Config, log *slog.Logger) (*capture.Browser, error) {
	if !cfg.laneOwnBrowser() {
		return nil, nil
	}
	ccfg.Tabs, ccfg.InteractiveTabs, ccfg.Nice = cfg.InteractiveBrowserTabs, 0, 0
	ccfg.Logger = log.With("component", "interactive")
	b, err := capture.New(ctx, ccfg)
	if err != nil {
		return nil, fmt.Errorf("the interactive lane's chromium: %w", err)
	}
	return b, nil
}

// startSessionBrowser prepares the Chromium of interactive sessions: one of their own, so a
// session's tab never holds a batch tab nor delays the batch browser's recycling; it starts
// with the first session. nil when the worker holds no sessions (SNAPQ_SESSION_TABS=0, or
// a remote browser pool).
func startSessionBrowser(cfg workerConfig, ccfg capture.Config, log *slog.Logger) (*capture.Browser, error) {
	if cfg.SessionTabs == 0 || ccfg.RemoteURL != "" {
		return nil, nil
	}
	ccfg.Tabs, ccfg.InteractiveTabs, ccfg.Nice = cfg.SessionTabs, 0, 0
	ccfg.Logger = log.With("component", "sessions")
	b, err := capture.NewUnstarted(ccfg)
	if err != nil {
		return nil, fmt.Errorf("the sessions' chromium: %w", err)
	}
	return b, nil
}

// serveSessions runs the worker's side of interactive sessions until ctx ends (then it
// closes them, reason worker_shutdown); the returned channel is closed when it is done.
func serveSessions(ctx context.Context, cfg workerConfig, d *deps, m *workerMetrics, log *slog.Logger) <-chan struct{} {
	done := make(chan struct{})
	if d.sessionBrowser == nil {
		close(done)
		return done
	}
	host, _ := os.Hostname()
	h := &session.Host{Worker: fmt.Sprintf("%s-%d-%s", host, os.Getpid(), session.NewID()[:8]), Tabs: cfg.SessionTabs,
		Browser: d.sessionBrowser, Repo: d.store, Bus: &sessionbus.Bus{Redis: d.rdb}, Feed: d.events, Objects: d.objects,
		Run: cfg.Sessions, Logger: log.With("component", "sessions")}
	m.watchSessions(h, d.sessionBrowser)
	go func() {
		defer close(done)
		h.Serve(ctx)
	}()
	return done
}

// openDeps connects to Postgres (with opts) and S3, starts Chromium behind
// the egress guard and opens the task queue; on error it closes what it had
// opened.
func openDeps(ctx context.Context, cfg workerConfig, log *slog.Logger, opts ...store.Option) (_ *deps, err error) {
	d := &deps{}
	if d.store, err = store.Open(ctx, cfg.DatabaseURL, opts...); err != nil {
		return nil, err
	}
	d.store.SetSealer(cfg.Sealer) // suites' vcs tokens and notify channels
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	if d.objects, err = artifacts.New(ctx, cfg.S3); err != nil {
		return nil, err
	}
	if err = d.startBrowsers(ctx, cfg, log); err != nil {
		return nil, err
	}
	// The worker that completes a batch enqueues its webhook delivery, and a run
	// capture's comparison, at once; scheduled runs enqueue their capture jobs.
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err = queue.CheckRedis(cctx, cfg.Redis) // the wrong kind of Redis for the URL's form
	cancel()
	if err != nil {
		return nil, err
	}
	d.tasks = queue.NewAsynqQueue(cfg.Redis, cfg.queueConfig())
	rdb, ok := cfg.Redis.MakeRedisClient().(redis.UniversalClient)
	if !ok {
		return nil, errors.New("unexpected redis client type")
	}
	d.rdb = rdb
	// Job and comparison changes go to the live event streams (best effort).
	d.events = &events.Publisher{Redis: rdb, Logger: log.With("component", "events")}
	d.store.SetEvents(d.events)
	d.hosts = ratelimit.NewHostSemaphore(rdb)
	d.dispatch = &jobs.Dispatcher{Repo: d.store, Queue: d.tasks, Logger: log.With("component", "dispatch"),
		Depth: cfg.DispatchDepth, Fleet: d.tasks.FleetConcurrency, InteractiveFleet: d.tasks.InteractiveConcurrency}
	return d, nil
}

// startBrowsers starts the egress guard, the filter lists and the Chromiums (the capture
// browser and, when sessions are on, the sessions' own).
func (d *deps) startBrowsers(ctx context.Context, cfg workerConfig, log *slog.Logger) error {
	// Chromium reaches the network only through the egress guard: private, loopback,
	// link-local and reserved destinations are refused unless SNAPQ_EGRESS_ALLOW_CIDRS
	// allows them.
	ecfg, ccfg := cfg.Egress, cfg.Capture
	ecfg.Logger = log.With("component", "egress")
	d.guard = egress.New(ecfg)
	ccfg.Logger, ccfg.Markup = log, markup.Codec{}
	if !cfg.FilterLists.Off {
		// Loaded on the first job that blocks, once per worker, shared by every tab.
		eng, err := filterlist.NewLazy(cfg.FilterLists.Files, log.With("component", "filterlist"))
		if err != nil {
			return err
		}
		ccfg.Filter = eng
	}
	ccfg.Egress = func() (capture.EgressSession, error) {
		s, err := d.guard.NewSession()
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	var err error
	if d.browser, err = capture.New(ctx, ccfg); err != nil {
		return fmt.Errorf("start chromium: %w", err)
	}
	if d.laneBrowser, err = startLaneBrowser(ctx, cfg, ccfg, log); err != nil {
		return err
	}
	d.sessionBrowser, err = startSessionBrowser(cfg, ccfg, log)
	return err
}

var (
	_ jobs.HostSlots      = (*ratelimit.HostSemaphore)(nil)
	_ jobs.FirstHostSlots = (*ratelimit.HostSemaphore)(nil)
	_ jobs.ArtifactCopies = (*hotcopy.Store)(nil)
)

// close closes what openDeps opened, last opened first.
func (d *deps) close() {
	if d.rdb != nil {
		d.rdb.Close()
	}
	if d.tasks != nil {
		d.tasks.Close()
	}
	if d.browser != nil {
		d.browser.Close()
	}
	if d.sessionBrowser != nil {
		d.sessionBrowser.Close()
	}
	if d.laneBrowser != nil {
		d.laneBrowser.Close()
	}
	d.store.Close()
}

// newMux routes every task kind to its handler: captures and comparisons
// counted in metrics.
func newMux(cfg workerConfig, d *deps, metrics *workerMetrics, log *slog.Logger) *asynq.ServeMux {
	st, tasks := d.store, d.tasks
	announce := &webhook.Announcer{Repo: st, Queue: tasks, Logger: log.With("component", "webhooks")}
	regLog := log.With("component", "regression")
	sessions := &authprofile.Sessions{Repo: st, Sealer: cfg.Sealer, Renderer: d.renderer(), Lock: ratelimit.NewFlight(d.rdb),
		Logger: log.With("component", "auth"), OnFailure: authFailed(st, tasks, log)}
	h := &jobs.Handler{Repo: st, Renderer: d.renderer(), Store: d.objects, Logger: log,
		AfterFinal: []func(context.Context, *jobs.Job, jobs.Settled){announce.AfterFinal, regression.CompareWhenFinal(st, tasks, regLog),
			d.dispatch.AfterFinal},
		Hosts: d.hosts, HostConcurrency: cfg.HostConcurrency, InteractiveHostHeadroom: cfg.InteractiveHostHeadroom, Uploads: metrics.upload,
		Auth: sessions, Cache: st, Captured: metrics.captured, MaxInFlight: cfg.MaxJobsInFlight,
		Copies: &hotcopy.Store{Redis: d.rdb, MaxBytes: cfg.InteractiveCopyBytes}, Stage: metrics.stage}
	planner := &notify.Planner{Repo: st, Queue: tasks, Logger: log.With("component", "notify"), PublicURL: cfg.PublicURL}
	cmp := &regression.Comparer{Repo: st, Store: d.objects, Logger: regLog, Decoded: metrics.decoded, Rules: st,
		RunFinished: []func(context.Context, *regression.Run){func(ctx context.Context, r *regression.Run) { announce.Batch(ctx, r.BatchID) },
			regression.ReportEnd(st, tasks, regLog), planner.RunFinished}}
	if cfg.ContentAddressed {
		h.Content, cmp.Content = d.objects, d.objects
	}
	h.SkipThumbnails, cmp.SkipThumbnails = !cfg.Thumbnails, !cfg.Thumbnails
	inFlight := cfg.MaxJobsInFlight
	if inFlight == 0 {
		inFlight = -1 // SNAPQ_MAX_JOBS_IN_FLIGHT=0 is no cap; the regression service's 0 is its default
	}
	// Scheduled runs of discovering suites read their sitemaps (or crawl their pages)
	// through the egress guard.
	discoverer := &discover.Reader{Client: d.guard.HTTPClient(0)}
	runner := &regression.SuiteRunner{Regression: &regression.Service{Repo: st, Queue: tasks, Logger: regLog, MaxInFlight: inFlight,
		Dispatch: d.dispatch, Sitemaps: discoverer, Pages: discoverer, Budget: ratelimit.NewBudget(d.rdb, cfg.Budget)}}
	// Webhook deliveries go through the same egress guard as Chromium.
	wh := &webhook.Handler{Repo: st, Client: d.guard.HTTPClient(cfg.Webhook.Timeout), Timeout: cfg.Webhook.Timeout,
		Logger: log.With("component", "webhooks"),
		Events: map[string]webhook.EventData{regression.EventRunCompleted: regression.RunCompletedEvent(st)}}
	mux := asynq.NewServeMux()
	queue.Register(mux, h.Capture, metrics.captures)
	queue.Register(mux, wh.Run)
	queue.Register(mux, cmp.Run, metrics.comparisons)
	queue.Register(mux, runner.Run)
	queue.Register(mux, sessions.RunTest)
	// Commit statuses and pull request comments go through the egress guard too.
	rep := &regression.Reporter{Repo: st, HTTP: d.guard.HTTPClient(cfg.Webhook.Timeout), Logger: regLog}
	queue.Register(mux, rep.Run)
	// Notifications: chat and webhook channels, and the SMTP connection, go
	// through the egress guard too.
	nh := &notify.Handler{Repo: st, HTTP: d.guard.HTTPClient(cfg.Webhook.Timeout), Timeout: cfg.Webhook.Timeout,
		Mail: &notify.Mailer{Config: cfg.SMTP, Dial: d.guard.DialContext}, PublicURL: cfg.PublicURL,
		Logger: log.With("component", "notify")}
	queue.Register(mux, nh.Run)
	// Maintenance passes the api replicas schedule (one per SNAPQ_SWEEP_INTERVAL,
	// claimed in Postgres); their settings come in the payload.
	maintLog := log.With("component", "maintenance")
	sweep := &maintenance.SweepTask{Slots: st, Maintenance: &maintenance.Maintenance{
		Baselines: &regression.BranchExpiry{Repo: st},
		Retention: &maintenance.Retention{Repo: st, Objects: d.objects, Logger: maintLog},
		Sweeper:   &maintenance.Sweeper{Objects: d.objects, Repo: st, Logger: maintLog},
		Missing:   &maintenance.MissingCheck{Rows: st, Objects: d.objects, Logger: maintLog},
		Logger:    maintLog, Observe: metrics.sweeps.Observe}}
	queue.Register(mux, sweep.Run)
	return mux
}

// authFailed announces a failed login on the webhook of the batch whose job
// found it (auth_profile.failed, once per batch).
func authFailed(st *store.Store, tasks *queue.AsynqQueue, log *slog.Logger) func(context.Context, *authprofile.Profile, *jobs.Job, string) {
	return func(ctx context.Context, p *authprofile.Profile, job *jobs.Job, msg string) {
		data, err := json.Marshal(authprofile.NewFailedEvent(p, job, msg))
		if err != nil {
			return
		}
		id, ok, err := st.CreateEventDelivery(ctx, job.BatchID, authprofile.EventFailed, data)
		if err != nil || !ok {
			if err != nil {
				log.Warn("create the auth_profile.failed delivery", "batch_id", job.BatchID, "err", err)
			}
			return
		}
		if err := webhook.Enqueue(ctx, tasks, id); err != nil {
			log.Warn("enqueue the auth_profile.failed delivery; the reconciler will", "delivery_id", id, "err", err)
		}
	}
}

// newServer is the asynq server: SNAPQ_WORKER_JOBS tasks at once, retries
// backing off from SNAPQ_RETRY_BASE_DELAY (queue.Server has the rules).
func newServer(cfg workerConfig, log *slog.Logger) *queue.Server {
	return queue.NewServer(cfg.Redis, queue.ServerConfig{
		Concurrency:    cfg.Jobs,
		Queues:         cfg.queueConfig().WorkerQueues(), // every shard of every kind
		RetryBaseDelay: cfg.RetryBaseDelay,
		Logger:         env.AsynqLogger{L: log},
		LogLevel:       asynq.WarnLevel,
		Log:            log,
		Polling:        cfg.Polling,
	})
}

// startServers starts the asynq server of the capture, regression and
// webhook queues and the interactive lane's.
func startServers(cfg workerConfig, mux *asynq.ServeMux, log *slog.Logger) (srv, lane *queue.Server, err error) {
	srv = newServer(cfg, log)
	if err := srv.Start(mux); err != nil {
		return nil, nil, fmt.Errorf("start asynq server: %w", err)
	}
	lane = newLaneServer(cfg, log)
	if err := lane.Start(laneMux(mux)); err != nil {
		return nil, nil, fmt.Errorf("start the interactive lane's asynq server: %w", err)
	}
	return srv, lane, nil
}

// drainBoth drains the two servers at once and reports whether both drained.
func drainBoth(ctx context.Context, srv, lane *queue.Server) bool {
	laneDrained := make(chan bool, 1)
	go func() { laneDrained <- lane.Drain(ctx) }()
	ok := srv.Drain(ctx)
	return <-laneDrained && ok
}

// newLaneServer serves the interactive queue (queue/lane.go) with task slots
// of its own: max(1, 2 × the lane's tabs), looking for a task every
// SNAPQ_INTERACTIVE_POLL while the queue is empty.
func newLaneServer(cfg workerConfig, log *slog.Logger) *queue.Server {
	return queue.NewServer(cfg.Redis, queue.ServerConfig{
		Concurrency: max(1, 2*cfg.laneTabs()),
		Queues:      map[string]int{queue.QueueInteractive: 1},
		// Somebody waits: a transient failure (a browser that crashed under
		// load) is tried again within a second or two, not after the batch
		// lane's backoff, which outlasts most callers' wait_ms; the lane's
		// queue is looked at every SNAPQ_INTERACTIVE_POLL.
		RetryBaseDelay: min(cfg.RetryBaseDelay, laneRetryBase),
		Polling: queue.Polling{TaskCheck: cfg.InteractivePoll,
			DelayedTaskCheck: min(cfg.Polling.DelayedTaskCheck, laneRetryBase/4)},
		Logger:   env.AsynqLogger{L: log},
		LogLevel: asynq.WarnLevel,
		Log:      log.With("lane", "interactive"),
	})
}

// laneRetryBase is the longest first backoff of an interactive task; the
// lane's server looks for tasks due four times as often.
const laneRetryBase = time.Second

// laneMux runs the interactive queue's capture tasks on mux's handler with
// their context marked interactive, so they may take the reserved tabs.
func laneMux(mux *asynq.ServeMux) *asynq.ServeMux {
	lane := asynq.NewServeMux()
	lane.Handle(jobs.KindCapture, asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		return mux.ProcessTask(capture.WithInteractive(ctx), t)
	}))
	return lane
}

// queueConfig is how the worker enqueues (webhooks, comparisons, scheduled
// runs' captures) and which queues it serves.
func (c workerConfig) queueConfig() queue.Config {
	return queue.Config{MaxRetry: c.MaxRetry, WebhookMaxRetry: c.Webhook.MaxRetry, Shards: c.Shards}
}

// listenMetrics listens on SNAPQ_METRICS_ADDR, or returns nil when it is unset.
func listenMetrics(cfg workerConfig) (net.Listener, error) {
	if cfg.MetricsAddr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on SNAPQ_METRICS_ADDR=%s: %w", cfg.MetricsAddr, err)
	}
	return ln, nil
}
