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
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/queue"
	"github.com/snapq/snapq/ratelimit"
	"github.com/snapq/snapq/regression"
	"github.com/snapq/snapq/store"
	"github.com/snapq/snapq/web"
	"github.com/snapq/snapq/webhook"
)

func main() {
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
configuration: SNAPQ_* environment variables, see README.md`

// openStore connects to SNAPQ_DATABASE_URL.
func openStore(ctx context.Context) (*store.Store, error) {
	var r env.Reader
	dbURL := env.DatabaseURL(&r)
	if err := r.Err(); err != nil {
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

func serve(ctx context.Context) error {
	var r env.Reader
	log := env.Logger(&r, "api")
	addr := r.String("SNAPQ_HTTP_ADDR", "127.0.0.1:8080")
	dbURL := env.DatabaseURL(&r)
	redisOpt := env.Redis(&r)
	s3cfg := env.S3(&r)
	maxRetry := r.Int("SNAPQ_MAX_RETRY", 3)
	webhookMaxRetry := r.Int("SNAPQ_WEBHOOK_MAX_RETRY", webhook.DefaultMaxRetry) // for deliveries the reconciler enqueues
	reconcileEvery := r.Duration("SNAPQ_RECONCILE_INTERVAL", time.Minute)
	reconcileGrace := r.Duration("SNAPQ_RECONCILE_GRACE", 30*time.Second)
	scheduleSync := r.Duration("SNAPQ_SCHEDULE_SYNC", 30*time.Second)
	webCfg := web.Config{
		MaxBodyBytes: int64(r.Int("SNAPQ_MAX_BODY_BYTES", 1<<20)),
		PublicURL:    r.String("SNAPQ_PUBLIC_URL", ""),
		Auth:         r.String("SNAPQ_AUTH", "on") != "off",
		CORSOrigins:  splitList(r.String("SNAPQ_CORS_ORIGINS", "")),
	}
	rate := r.Float("SNAPQ_RATE_LIMIT", 10)
	burst := r.Int("SNAPQ_RATE_BURST", 20)
	maxTargets := r.Int("SNAPQ_MAX_TARGETS", jobs.MaxTargets)
	maxInFlight := r.Int("SNAPQ_MAX_JOBS_IN_FLIGHT", jobs.DefaultMaxInFlight)
	maxSuites := r.Int("SNAPQ_MAX_SUITES_PER_KEY", regression.DefaultMaxSuitesPerKey)
	minScheduleInterval := r.Duration("SNAPQ_MIN_SCHEDULE_INTERVAL", regression.DefaultMinScheduleInterval)
	queuesUI := r.String("SNAPQ_ADMIN_QUEUES", "readonly")
	metricsMode, metricsErr := web.ParseMetricsMode(r.String("SNAPQ_METRICS", web.MetricsOn))
	var authErr error
	if auth := r.String("SNAPQ_AUTH", "on"); auth != "on" && auth != "off" {
		authErr = fmt.Errorf("SNAPQ_AUTH=%q: want on or off", auth)
	} else if !webCfg.Auth && !loopback(addr) {
		authErr = fmt.Errorf("SNAPQ_AUTH=off is only allowed when SNAPQ_HTTP_ADDR listens on loopback (it is %s): create keys with `api keys create --name NAME` instead", addr)
	}
	var queuesErr error
	if queuesUI != "readonly" && queuesUI != "on" && queuesUI != "off" {
		queuesErr = fmt.Errorf("SNAPQ_ADMIN_QUEUES=%q: want readonly, on or off", queuesUI)
	}
	if err := errors.Join(r.Err(), authErr, queuesErr, metricsErr, s3cfg.Validate()); err != nil {
		return err
	}

	st, err := store.Open(ctx, dbURL)
	if err != nil {
		return err
	}
	defer st.Close()
	if applied, err := st.Migrate(ctx); err != nil {
		return err
	} else if len(applied) > 0 {
		log.Info("migrations applied", "versions", applied)
	}
	objects, err := artifacts.New(ctx, s3cfg)
	if err != nil {
		return err
	}
	tasks := queue.NewAsynqQueue(redisOpt, queue.Config{MaxRetry: maxRetry, WebhookMaxRetry: webhookMaxRetry})
	defer tasks.Close()
	rdb, ok := redisOpt.MakeRedisClient().(redis.UniversalClient)
	if !ok {
		return errors.New("unexpected redis client type")
	}
	defer rdb.Close()

	var queues http.Handler
	if queuesUI != "off" {
		// asynqmon, on the same Redis as the queue; web guards it with API keys when auth is on.
		mon := asynqmon.New(asynqmon.Options{RootPath: web.QueuesPath, RedisConnOpt: redisOpt, ReadOnly: queuesUI == "readonly"})
		defer mon.Close()
		queues = mon
	}

	var metrics *web.Metrics
	if metricsMode != web.MetricsOff {
		inspector := asynq.NewInspectorFromRedisClient(rdb)
		metrics, err = web.NewMetrics(web.MetricsConfig{Mode: metricsMode, Counts: st, Queues: inspector})
		if err != nil {
			return err
		}
	}

	srv := &web.Server{
		Service:    &jobs.Service{Repo: st, Queue: tasks, Logger: log, MaxTargets: maxTargets, MaxInFlight: maxInFlight},
		Regression: &regression.Service{Repo: st, Queue: tasks, Logger: log, MaxInFlight: maxInFlight, MaxSuitesPerKey: maxSuites, MinScheduleInterval: minScheduleInterval},
		Repo:       st,
		Keys:       st,
		Limiter:    ratelimit.New(rdb, rate, burst),
		Presigner:  objects,
		Queues:     queues,
		Metrics:    metrics,
		Logger:     log,
		Config:     webCfg,
		Checks: []web.Check{
			{Name: "postgres", Ping: st.Ping},
			{Name: "redis", Ping: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }},
			{Name: "s3", Ping: objects.Ping},
		},
	}
	rec := &jobs.Reconciler{Repo: st, Queue: tasks, Logger: log, Grace: reconcileGrace, Steps: []jobs.ReconcileStep{
		webhook.ReconcileStep(st, tasks, reconcileGrace),
		regression.ReconcileStep(st, tasks),
	}}
	recCtx, stopRec := context.WithCancel(ctx)
	defer stopRec()
	go rec.Run(recCtx, reconcileEvery)

	// Suite schedules: read from Postgres every SNAPQ_SCHEDULE_SYNC, so changes
	// need no restart; replicas dedupe activations (jobs/schedule.go).
	sched, err := asynq.NewPeriodicTaskManager(asynq.PeriodicTaskManagerOpts{
		RedisConnOpt:               redisOpt,
		PeriodicTaskConfigProvider: &regression.ScheduleProvider{Repo: st, MinInterval: minScheduleInterval, Logger: log},
		SyncInterval:               scheduleSync,
		SchedulerOpts:              &asynq.SchedulerOpts{Logger: env.AsynqLogger{L: log}, LogLevel: asynq.WarnLevel},
	})
	if err != nil {
		return fmt.Errorf("suite scheduler: %w", err)
	}
	if err := sched.Start(); err != nil {
		return fmt.Errorf("start suite scheduler: %w", err)
	}
	defer sched.Shutdown()

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on SNAPQ_HTTP_ADDR=%s: %w", addr, err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	log.Info("api listening", "addr", ln.Addr().String(), "auth", webCfg.Auth, "metrics", metricsMode)
	if !webCfg.Auth {
		log.Warn("SNAPQ_AUTH=off: the API accepts requests without a key (loopback only)")
	}
	if webCfg.Auth && metricsMode == web.MetricsPublic {
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
