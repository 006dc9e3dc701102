// Command api serves snapq's REST API, applies migrations and runs the
// reconciler that re-enqueues accepted jobs whose task went missing.
//
//	api            serve (same as "api serve")
//	api migrate    apply database migrations and exit
package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/snapq/snapq/authprofile"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hibiken/asynq"
	"github.com/hibiken/asynqmon"
	"github.com/redis/go-redis/v9"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/cmd/internal/env"
	"github.com/snapq/snapq/cmd/internal/harden"
	"github.com/snapq/snapq/cmd/internal/sweepmetrics"
	"github.com/snapq/snapq/discover"
	"github.com/snapq/snapq/egress"
	"github.com/snapq/snapq/events"
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
	"github.com/snapq/snapq/web"
	"github.com/snapq/snapq/webhook"
)

func main() {
	// First of all: no process of this uid (Chromium's, in a container) reads
	// the credentials in this process's environment or memory (harden's doc).
	if err := harden.NotDumpable(); err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
	cmd := "serve"
	if len(os.Args) > 1 {
		cmd = os.Args[1]
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch cmd {
	case "serve":
		err = serve(ctx)
	case "migrate":
		err = migrate(ctx)
	case "keys":
		err = keys(ctx, os.Args[2:])
	case "-h", "--help", "help":
		fmt.Println(usage)
		return
	default:
		err = fmt.Errorf("unknown command %q\n%s", cmd, usage)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  api [serve]                    serve the REST API (applies migrations first)
  api migrate                    apply database migrations and exit
  api keys create --name NAME    create an API key; it is printed once
  api keys list                  list keys (prefix, name, created, last used, revoked)
  api keys revoke ID             revoke a key
  api keys retention ID DAYS     delete the key's batches after DAYS days (0: keep; "default": SNAPQ_RETENTION_DAYS)
configuration: SNAPQ_* environment variables, see docs/operating/configuration.md`

// openStore connects to SNAPQ_DATABASE_URL.
func openStore(ctx context.Context) (*store.Store, error) {
	dbURL, err := loadDatabaseURL()
	if err != nil {
		return nil, err
	}
	return store.Open(ctx, dbURL)
}

func migrate(ctx context.Context) error {
	st, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	applied, err := st.Migrate(ctx)
	for _, v := range applied {
		fmt.Println("applied", v)
	}
	if err == nil && len(applied) == 0 {
		fmt.Println("database is up to date")
	}
	return err
}

// serve runs the API until ctx ends: migrations, then the HTTP server, the
// reconciler and the suite scheduler; on shutdown it drains HTTP requests for
// up to 15 s and closes everything in reverse order.
func serve(ctx context.Context) error {
	cfg, err := loadAPIConfig()
	if err != nil {
		return err
	}
	log := env.Logger(cfg.LogLevel, "api")
	d, err := openDeps(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer d.close()
	srv, closeServer, err := newServer(cfg, d, log)
	if err != nil {
		return err
	}
	defer closeServer()
	stopLoops, err := startLoops(ctx, cfg, d, log)
	if err != nil {
		return err
	}
	defer stopLoops()
	return listenAndServe(ctx, cfg, srv.Handler(), log)
}

// deps are the api's connections: Postgres (migrated), S3, the task queue and
// a Redis client for rate limits, health checks and queue metrics.
type deps struct {
	store   *store.Store
	objects *artifacts.Store
	tasks   *queue.AsynqQueue
	rdb     redis.UniversalClient
	// dispatch feeds the queue from the held jobs (kicked by submissions).
	dispatch *jobs.Dispatcher
	// eventsRDB is the Redis client of the live event streams: one blocking
	// read per followed stream, so a pool of its own sized to SNAPQ_SSE_MAX_STREAMS.
	eventsRDB redis.UniversalClient
	hub       *events.Hub
	events    *events.Publisher
	sessions  *session.Service
}

// openDeps connects to every dependency and applies pending migrations; on
// error it closes what it had opened.
func openDeps(ctx context.Context, cfg apiConfig, log *slog.Logger) (_ *deps, err error) {
	d := &deps{}
	if d.store, err = store.Open(ctx, cfg.DatabaseURL); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	if applied, err := d.store.Migrate(ctx); err != nil {
		return nil, err
	} else if len(applied) > 0 {
		log.Info("migrations applied", "versions", applied)
	}
	// Suites' vcs tokens and notify channels are sealed at rest: tokens
	// stored in plaintext before, or sealed under a key now old, are sealed
	// again under the current key.
	d.store.SetSealer(cfg.Sealer)
	if n, err := d.store.SealSuiteSecrets(ctx); err != nil {
		log.Warn("seal suites' secrets", "err", err)
	} else if n > 0 && cfg.Sealer == nil {
		log.Warn("suites hold vcs tokens in plaintext: set SNAPQ_SECRET_KEY to encrypt them", "suites", n)
	} else if n > 0 {
		log.Info("suites' secrets sealed under the current key", "suites", n, "key_id", cfg.Sealer.KeyID())
	}
	resealSecrets(ctx, d.store, cfg.Sealer, log)
	if d.objects, err = artifacts.New(ctx, cfg.S3); err != nil {
		return nil, err
	}
	if err := checkRedis(ctx, cfg.Redis); err != nil {
		return nil, err
	}
	d.tasks = queue.NewAsynqQueue(cfg.Redis, cfg.Queue)
	rdb, ok := cfg.Redis.MakeRedisClient().(redis.UniversalClient)
	if !ok {
		return nil, errors.New("unexpected redis client type")
	}
	d.rdb = rdb
	d.dispatch = &jobs.Dispatcher{Repo: d.store, Queue: d.tasks, Logger: log.With("component", "dispatch"),
		Depth: cfg.DispatchDepth, Fleet: d.tasks.FleetConcurrency, InteractiveFleet: d.tasks.InteractiveConcurrency}
	// The api publishes what it changes itself (a cancel, the reconciler's
	// requeues and failures) and serves the streams.
	d.events = &events.Publisher{Redis: rdb, Logger: log.With("component", "events")}
	d.store.SetEvents(d.events)
	sse := cfg.SSE.WithDefaults()
	if d.eventsRDB, ok = queue.WithPoolSize(cfg.Redis, sse.MaxStreams+10).MakeRedisClient().(redis.UniversalClient); !ok {
		return nil, errors.New("unexpected redis client type")
	}
	d.hub = &events.Hub{Redis: d.eventsRDB, Logger: log.With("component", "events")}
	// Interactive sessions: commands and replies on Redis, each session's tab on one worker;
	// the api's waits for replies block, so they use the event streams' pool.
	d.sessions = &session.Service{Repo: d.store, Bus: &sessionbus.Bus{Redis: d.eventsRDB}, Feed: d.events,
		PerKey: noCapAsNegative(cfg.SessionsPerKey), MaxInFlight: cfg.MaxJobsInFlight, Logger: log.With("component", "sessions")}
	return d, nil
}

// checkRedis refuses to start on a SNAPQ_REDIS_URL that names the wrong kind
// of Redis (queue.CheckRedis); a Redis that does not answer yet is not an error.
func checkRedis(ctx context.Context, opt asynq.RedisConnOpt) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return queue.CheckRedis(ctx, opt)
}

// close closes what openDeps opened, last opened first.
func (d *deps) close() {
	if d.eventsRDB != nil {
		d.eventsRDB.Close()
	}
	if d.rdb != nil {
		d.rdb.Close()
	}
	if d.tasks != nil {
		d.tasks.Close()
	}
	d.store.Close()
}

// newServer builds the HTTP API on d, with the queue UI and metrics as
// configured; closeServer closes the queue UI.
func newServer(cfg apiConfig, d *deps, log *slog.Logger) (_ *web.Server, closeServer func(), err error) {
	st, tasks, rdb, objects := d.store, d.tasks, d.rdb, d.objects
	maxTargets, maxInFlight, rate, burst, webCfg := cfg.MaxTargets, cfg.MaxJobsInFlight, cfg.RateLimit, cfg.RateBurst, cfg.Web
	queues, closeServer := queuesUI(cfg)
	sweeps := sweepmetrics.New()
	metrics, err := newMetrics(cfg, d, sweeps)
	if err != nil {
		closeServer()
		return nil, nil, err
	}

	// Sitemaps (of batches and of discovering suites' runs) and the pages of suites that
	// discover by crawl are fetched through the egress guard, under the workers' policy.
	sitemaps := &discover.Reader{Client: egress.New(egress.Config{Policy: egress.NewPolicy(cfg.EgressAllow),
		Logger: log.With("component", "egress")}).HTTPClient(0), Limits: discover.Limits{Timeout: cfg.SitemapTimeout}}
	// One per-key budget for the work the api does outside the capture queue.
	budget := ratelimit.NewBudget(rdb, cfg.Budget)
	srv := &web.Server{
		Service: &jobs.Service{Repo: st, Queue: tasks, Logger: log, MaxTargets: maxTargets, MaxInFlight: maxInFlight,
			Dispatch: d.dispatch, MaxHostConcurrency: cfg.HostConcurrencyMax, Sitemaps: sitemaps, Budget: budget},
		Regression: &regression.Service{Repo: st, Queue: tasks, Logger: log, MaxInFlight: noCapAsNegative(cfg.MaxJobsInFlight),
			MaxSuitesPerKey: noCapAsNegative(cfg.MaxSuitesPerKey), MinScheduleInterval: cfg.MinScheduleInterval,
			Dispatch: d.dispatch, MaxHostConcurrency: cfg.HostConcurrencyMax, Report: regression.ReportStart(tasks, log),
			ReportApproved: regression.ReportApproval(st, tasks, log), MailDomains: cfg.MailDomains,
			Sitemaps: sitemaps, Pages: sitemaps, Budget: budget},
		Batches:      st,
		Suites:       st,
		Rules:        st,
		Webhooks:     st,
		AuthProfiles: &authprofile.Service{Repo: st, Sealer: cfg.Sealer, Queue: tasks, MaxPerKey: noCapAsNegative(cfg.MaxAuthProfilesPerKey)},
		Keys:         st,
		Limiter:      ratelimit.New(rdb, rate, burst),
		Budget:       budget,
		// failed authentications per client address (web.Server.AuthFailures)
		AuthFailures: ratelimit.New(rdb, cfg.AuthFailureRate, cfg.AuthFailureBurst),
		Presigner:    objects,
		Archives:     st,      // GET /v1/batches/:id/archive, /v1/runs/:id/archive
		Objects:      objects, // the archives' objects, streamed
		Thumbnails:   st,
		Maintenance:  newMaintenance(cfg, d, log, sweeps.Observe), // POST /v1/admin/sweep
		Queues:       queues,
		// GET /v1/queues: counts per kind over every shard, for any key
		QueueInspector: asynq.NewInspectorFromRedisClient(rdb),
		QueueShards:    cfg.Queue.Shards,
		Metrics:        metrics,
		Logger:         log,
		Config:         webCfg,
		Events:         d.hub,
		Copies:         &hotcopy.Store{Redis: rdb},
		SSE:            cfg.SSE,
		Sessions:       d.sessions,
		Checks: []web.Check{
			{Name: "postgres", Ping: st.Ping},
			{Name: "redis", Ping: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }},
			{Name: "s3", Ping: objects.Ping},
		},
	}
	return srv, closeServer, nil
}

// queuesUI is asynqmon on the queue's Redis (SNAPQ_ADMIN_QUEUES), or nil when
// off; web guards it with API keys when auth is on. closeUI closes it.
func queuesUI(cfg apiConfig) (_ http.Handler, closeUI func()) {
	if cfg.AdminQueues == queuesOff {
		return nil, func() {}
	}
	mon := asynqmon.New(asynqmon.Options{RootPath: web.QueuesPath, RedisConnOpt: cfg.Redis, ReadOnly: cfg.AdminQueues == queuesReadOnly})
	return mon, func() { mon.Close() }
}

// newMetrics builds the /metrics registry (SNAPQ_METRICS), or nil when off.
func newMetrics(cfg apiConfig, d *deps, sweeps *sweepmetrics.Metrics) (*web.Metrics, error) {
	if cfg.Metrics == web.MetricsOff {
		return nil, nil
	}
	inspector := asynq.NewInspectorFromRedisClient(d.rdb)
	return web.NewMetrics(web.MetricsConfig{Mode: cfg.Metrics, Counts: d.store, Storage: d.store, Queues: inspector, QueueShards: cfg.Queue.Shards,
		Collectors: append(append(d.events.Collectors(), d.hub.Collectors()...), sweeps.Collectors()...)})
}

// startLoops starts the reconciler, which re-enqueues accepted jobs whose task
// went missing and sweeps orphaned objects, and the suite scheduler; stop ends both, scheduler first.
func startLoops(ctx context.Context, cfg apiConfig, d *deps, log *slog.Logger) (stop func(), err error) {
	st, tasks := d.store, d.tasks
	rec := &jobs.Reconciler{Repo: st, Queue: tasks, Logger: log, Grace: cfg.ReconcileGrace, Steps: []jobs.ReconcileStep{
		webhook.ReconcileStep(st, tasks, cfg.ReconcileGrace),
		regression.ReconcileStep(st, tasks),
		notify.ReconcileStep(st, tasks, log.With("component", "notify"), cfg.Web.PublicURL),
	}}
	recCtx, stopRec := context.WithCancel(ctx)
	go rec.Run(recCtx, cfg.ReconcileInterval)
	go d.dispatch.Run(recCtx)  // fair scheduling: held jobs to the queue
	go d.sessions.Reap(recCtx) // sessions of dead workers end as lost

	// Suite schedules: read from Postgres every SNAPQ_SCHEDULE_SYNC, so changes
	// need no restart; replicas dedupe activations (regression/schedule.go).
	sched, err := asynq.NewPeriodicTaskManager(asynq.PeriodicTaskManagerOpts{
		RedisConnOpt:               cfg.Redis,
		PeriodicTaskConfigProvider: &queue.CronProvider{Source: &regression.ScheduleProvider{Repo: st, MinInterval: cfg.MinScheduleInterval, Logger: log}},
		SyncInterval:               cfg.ScheduleSync,
		SchedulerOpts:              &asynq.SchedulerOpts{Logger: env.AsynqLogger{L: log}, LogLevel: asynq.WarnLevel},
	})
	if err != nil {
		stopRec()
		return nil, fmt.Errorf("suite scheduler: %w", err)
	}
	if err := sched.Start(); err != nil {
		stopRec()
		return nil, fmt.Errorf("start suite scheduler: %w", err)
	}
	// Maintenance (retention, orphan sweep, missing objects): every replica
	// schedules the pass, a worker runs it once per SNAPQ_SWEEP_INTERVAL.
	maint, err := sweepScheduler(cfg, log)
	if err != nil {
		sched.Shutdown()
		stopRec()
		return nil, err
	}
	return func() {
		if maint != nil {
			maint.Shutdown()
		}
		sched.Shutdown()
		stopRec()
	}, nil
}

// sweepScheduler enqueues a maintenance:sweep task every SNAPQ_SWEEP_INTERVAL
// carrying this api's retention settings, or returns nil when the interval
// is 0. The task is unique for an interval in Redis and the worker claims
// the interval in Postgres, so N replicas make one pass per interval.
func sweepScheduler(cfg apiConfig, log *slog.Logger) (*asynq.Scheduler, error) {
	if cfg.SweepInterval <= 0 {
		return nil, nil
	}
	task, opts, err := queue.NewTask(sweepPayload(cfg), 0, cfg.Queue)
	if err != nil {
		return nil, err
	}
	s := asynq.NewScheduler(cfg.Redis, &asynq.SchedulerOpts{Logger: env.AsynqLogger{L: log}, LogLevel: asynq.WarnLevel,
		EnqueueErrorHandler: func(_ *asynq.Task, _ []asynq.Option, err error) {
			if !errors.Is(err, asynq.ErrDuplicateTask) { // another replica queued this interval's pass
				log.Warn("enqueue maintenance pass", "err", err)
			}
		}})
	opts = append(opts, asynq.Unique(cfg.SweepInterval)) // one queued per interval
	if _, err := s.Register("@every "+cfg.SweepInterval.String(), task, opts...); err != nil {
		return nil, fmt.Errorf("schedule maintenance: %w", err)
	}
	if err := s.Start(); err != nil {
		return nil, fmt.Errorf("start maintenance scheduler: %w", err)
	}
	return s, nil
}

func sweepPayload(cfg apiConfig) maintenance.SweepPayload {
	return maintenance.SweepPayload{PassID: maintenance.SweepPassID, DryRun: cfg.SweepDryRun, RetentionDays: cfg.RetentionDays,
		BranchBaselineDays: cfg.BranchBaselineDays,
		GraceS:             int64(cfg.SweepGrace / time.Second), IntervalS: int64(cfg.SweepInterval / time.Second)}
}

// newMaintenance is the api's own maintenance pass, for POST /v1/admin/sweep.
func newMaintenance(cfg apiConfig, d *deps, log *slog.Logger, observe func(maintenance.SweepReport)) *maintenance.Maintenance {
	log = log.With("component", "maintenance")
	return &maintenance.Maintenance{
		Baselines: &regression.BranchExpiry{Repo: d.store}, BranchBaselineDays: cfg.BranchBaselineDays,
		Retention: &maintenance.Retention{Repo: d.store, Objects: d.objects, Logger: log, DefaultDays: cfg.RetentionDays, Grace: cfg.SweepGrace},
		Sweeper:   &maintenance.Sweeper{Objects: d.objects, Repo: d.store, Logger: log, Grace: cfg.SweepGrace},
		Missing:   &maintenance.MissingCheck{Rows: d.store, Objects: d.objects, Logger: log},
		Logger:    log, Observe: observe,
		// SNAPQ_SWEEP_DRY_RUN holds for on-demand passes too.
		ForceDryRun: cfg.SweepDryRun}
}

// listenAndServe serves h on SNAPQ_HTTP_ADDR until ctx ends, then gives
// requests in progress up to 15 s to finish.
func listenAndServe(ctx context.Context, cfg apiConfig, h http.Handler, log *slog.Logger) error {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on SNAPQ_HTTP_ADDR=%s: %w", cfg.Addr, err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	log.Info("api listening", "addr", ln.Addr().String(), "auth", cfg.Web.Auth, "metrics", cfg.Metrics)
	if !cfg.Web.Auth {
		log.Warn("SNAPQ_AUTH=off: the API accepts requests without a key (loopback only)")
	}
	if cfg.Web.Auth && cfg.Metrics == web.MetricsPublic {
		log.Warn("SNAPQ_METRICS=public: /metrics answers without an API key; keep the port on a private network")
	}

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		slog.Warn("http shutdown", "err", err)
	}
	return nil
}

// resealSecrets seals the webhook signing secrets still in plaintext, and
// seals again under the current key the webhook secrets and auth profiles'
// secrets and logins sealed under an old one (so SNAPQ_SECRET_KEYS_OLD can
// then be emptied). A failure is logged; the api starts anyway.
func resealSecrets(ctx context.Context, st *store.Store, sl *authprofile.Sealer, log *slog.Logger) {
	if sl == nil {
		return
	}
	if n, err := st.SealWebhookSecrets(ctx); err != nil {
		log.Warn("seal webhook secrets", "err", err)
	} else if n > 0 {
		log.Info("webhook secrets sealed under the current key", "rows", n, "key_id", sl.KeyID())
	}
	if n, err := st.ResealAuthProfiles(ctx); err != nil {
		log.Warn("reseal auth profiles", "err", err)
	} else if n > 0 {
		log.Info("auth profiles' secrets and logins sealed again under the current key", "values", n, "key_id", sl.KeyID())
	}
}
