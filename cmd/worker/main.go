// Command worker runs capture tasks: one Chromium per process, driven by
// go-rod, artifacts uploaded to S3, results written to Postgres.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/hibiken/asynq"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/cmd/internal/env"
	"github.com/snapq/snapq/egress"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/queue"
	"github.com/snapq/snapq/regression"
	"github.com/snapq/snapq/store"
	"github.com/snapq/snapq/webhook"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

// run works on tasks until ctx ends, then stops taking new ones and gives
// running jobs SNAPQ_SHUTDOWN_TIMEOUT to finish before handing them back.
func run(ctx context.Context) error {
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
	metricsLn, err := listenMetrics(cfg)
	if err != nil {
		return err
	}
	if metricsLn != nil {
		defer metricsLn.Close()
	}
	srv := newServer(cfg, log)
	if err := srv.Start(newMux(cfg, d, metrics, log)); err != nil {
		return fmt.Errorf("start asynq server: %w", err)
	}
	if metricsLn != nil {
		go metrics.serve(ctx, metricsLn, log)
	}
	if cfg.PprofAddr != "" {
		go servePprof(cfg.PprofAddr, log)
	}
	log.Info("worker started", "egress_allow", cfg.EgressAllow, "tabs", cfg.Concurrency, "jobs", cfg.Jobs, "chrome", cfg.Capture.ChromeBin,
		"chrome_url", cfg.Capture.RemoteURL, "egress_proxy_listen", cfg.Egress.Listen)
	<-ctx.Done()
	log.Info("shutting down: finishing running jobs", "timeout", cfg.ShutdownTimeout)
	srv.Shutdown()
	return nil
}

// deps are the worker's connections and its browser.
type deps struct {
	store   *store.Store
	objects *artifacts.Store
	guard   *egress.Proxy
	browser *capture.Browser
	tasks   *queue.AsynqQueue
}

// openDeps connects to Postgres and S3, starts Chromium behind the egress
// guard and opens the task queue; on error it closes what it had opened.
func openDeps(ctx context.Context, cfg workerConfig, log *slog.Logger) (_ *deps, err error) {
	d := &deps{}
	if d.store, err = store.Open(ctx, cfg.DatabaseURL); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	if d.objects, err = artifacts.New(ctx, cfg.S3); err != nil {
		return nil, err
	}
	// Chromium reaches the network only through the egress guard: private, loopback,
	// link-local and reserved destinations are refused unless SNAPQ_EGRESS_ALLOW_CIDRS
	// allows them.
	ecfg, ccfg := cfg.Egress, cfg.Capture
	ecfg.Logger = log.With("component", "egress")
	d.guard = egress.New(ecfg)
	ccfg.Logger = log
	ccfg.Egress = func() (capture.EgressSession, error) {
		s, err := d.guard.NewSession()
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	if d.browser, err = capture.New(ctx, ccfg); err != nil {
		return nil, fmt.Errorf("start chromium: %w", err)
	}
	// The worker that completes a batch enqueues its webhook delivery, and a run
	// capture's comparison, at once; scheduled runs enqueue their capture jobs.
	d.tasks = queue.NewAsynqQueue(cfg.Redis, queue.Config{MaxRetry: cfg.MaxRetry, WebhookMaxRetry: cfg.Webhook.MaxRetry})
	return d, nil
}

// close closes what openDeps opened, last opened first.
func (d *deps) close() {
	if d.tasks != nil {
		d.tasks.Close()
	}
	if d.browser != nil {
		d.browser.Close()
	}
	d.store.Close()
}

// newMux routes every task kind to its handler: captures and comparisons
// counted in metrics.
func newMux(cfg workerConfig, d *deps, metrics *workerMetrics, log *slog.Logger) *asynq.ServeMux {
	st, tasks := d.store, d.tasks
	announce := &webhook.Announcer{Repo: st, Queue: tasks, Logger: log.With("component", "webhooks")}
	regLog := log.With("component", "regression")
	h := &jobs.Handler{Repo: st, Renderer: d.browser, Store: d.objects, Logger: log,
		AfterFinal: []func(context.Context, *jobs.Job){announce.AfterFinal, regression.CompareWhenFinal(st, tasks, regLog)}}
	cmp := &regression.Comparer{Repo: st, Store: d.objects, Logger: regLog,
		RunFinished: []func(context.Context, *regression.Run){func(ctx context.Context, r *regression.Run) { announce.Batch(ctx, r.BatchID) }}}
	inFlight := cfg.MaxJobsInFlight
	if inFlight == 0 {
		inFlight = -1 // SNAPQ_MAX_JOBS_IN_FLIGHT=0 is no cap; the regression service's 0 is its default
	}
	runner := &regression.SuiteRunner{Regression: &regression.Service{Repo: st, Queue: tasks, Logger: regLog, MaxInFlight: inFlight}}
	// Webhook deliveries go through the same egress guard as Chromium.
	wh := &webhook.Handler{Repo: st, Client: d.guard.HTTPClient(cfg.Webhook.Timeout), Timeout: cfg.Webhook.Timeout,
		Logger: log.With("component", "webhooks"),
		Events: map[string]webhook.EventData{regression.EventRunCompleted: regression.RunCompletedEvent(st)}}
	mux := asynq.NewServeMux()
	queue.Register(mux, h.Capture, metrics.captures)
	queue.Register(mux, wh.Run)
	queue.Register(mux, cmp.Run, metrics.comparisons)
	queue.Register(mux, runner.Run)
	return mux
}

// newServer is the asynq server: SNAPQ_WORKER_JOBS tasks at once, retries
// backing off from SNAPQ_RETRY_BASE_DELAY.
func newServer(cfg workerConfig, log *slog.Logger) *asynq.Server {
	return asynq.NewServer(cfg.Redis, asynq.Config{
		Concurrency:    cfg.Jobs,
		Queues:         queue.Weights,
		RetryDelayFunc: queue.RetryDelay(cfg.RetryBaseDelay),
		// A job no browser could take (remote pool down or overloaded) is retried
		// with the usual backoff without using up its retries.
		IsFailure:       func(err error) bool { return !jobs.IsBrowserUnavailable(err) },
		ShutdownTimeout: cfg.ShutdownTimeout,
		Logger:          env.AsynqLogger{L: log},
		LogLevel:        asynq.WarnLevel,
	})
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
