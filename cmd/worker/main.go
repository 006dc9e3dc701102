// Command worker runs capture tasks: one Chromium per process, driven by
// go-rod, artifacts uploaded to S3, results written to Postgres.
package main

import (
	"context"
	"fmt"
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

func run(ctx context.Context) error {
	cfg, err := loadWorkerConfig()
	if err != nil {
		return err
	}
	log := env.Logger(cfg.LogLevel, "worker")
	redisOpt, wcfg, ccfg, ecfg := cfg.Redis, cfg.Webhook, cfg.Capture, cfg.Egress
	ecfg.Logger = log.With("component", "egress")
	ccfg.Logger = log

	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer st.Close()
	objects, err := artifacts.New(ctx, cfg.S3)
	if err != nil {
		return err
	}
	// Chromium reaches the network only through the egress guard: private, loopback,
	// link-local and reserved destinations are refused unless SNAPQ_EGRESS_ALLOW_CIDRS
	// allows them.
	guard := egress.New(ecfg)
	ccfg.Egress = func() (capture.EgressSession, error) {
		s, err := guard.NewSession()
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	browser, err := capture.New(ctx, ccfg)
	if err != nil {
		return fmt.Errorf("start chromium: %w", err)
	}
	defer browser.Close()

	// The worker that completes a batch enqueues its webhook delivery, and a run
	// capture's comparison, at once; scheduled runs enqueue their capture jobs.
	tasks := queue.NewAsynqQueue(redisOpt, queue.Config{MaxRetry: cfg.MaxRetry, WebhookMaxRetry: wcfg.MaxRetry})
	defer tasks.Close()
	announce := &webhook.Announcer{Repo: st, Queue: tasks, Logger: log.With("component", "webhooks")}
	regLog := log.With("component", "regression")
	h := &jobs.Handler{Repo: st, Renderer: browser, Store: objects, Logger: log,
		AfterFinal: []func(context.Context, *jobs.Job){announce.AfterFinal, regression.CompareWhenFinal(st, tasks, regLog)}}
	cmp := &regression.Comparer{Repo: st, Store: objects, Logger: regLog,
		RunFinished: []func(context.Context, *regression.Run){func(ctx context.Context, r *regression.Run) { announce.Batch(ctx, r.BatchID) }}}
	runner := &regression.SuiteRunner{Regression: &regression.Service{Repo: st, Queue: tasks, Logger: regLog}}
	// Webhook deliveries go through the same egress guard as Chromium.
	wh := &webhook.Handler{Repo: st, Client: guard.HTTPClient(wcfg.Timeout), Timeout: wcfg.Timeout,
		Logger: log.With("component", "webhooks"),
		Events: map[string]webhook.EventData{regression.EventRunCompleted: regression.RunCompletedEvent(st)}}
	srv := asynq.NewServer(redisOpt, asynq.Config{
		Concurrency:     cfg.Jobs,
		Queues:          queue.Weights,
		RetryDelayFunc:  queue.RetryDelay(cfg.RetryBaseDelay),
		ShutdownTimeout: cfg.ShutdownTimeout,
		Logger:          env.AsynqLogger{L: log},
		LogLevel:        asynq.WarnLevel,
	})
	metrics := newWorkerMetrics() // counted always, served only with SNAPQ_METRICS_ADDR
	mux := asynq.NewServeMux()
	queue.Register(mux, h.Capture, metrics.captures)
	queue.Register(mux, wh.Run)
	queue.Register(mux, cmp.Run, metrics.comparisons)
	queue.Register(mux, runner.Run)
	var metricsLn net.Listener
	if addr := cfg.MetricsAddr; addr != "" {
		if metricsLn, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("listen on SNAPQ_METRICS_ADDR=%s: %w", addr, err)
		}
		defer metricsLn.Close()
	}
	if err := srv.Start(mux); err != nil {
		return fmt.Errorf("start asynq server: %w", err)
	}
	if metricsLn != nil {
		go metrics.serve(ctx, metricsLn, log)
	}
	if addr := cfg.PprofAddr; addr != "" {
		go servePprof(addr, log)
	}
	log.Info("worker started", "egress_allow", cfg.EgressAllow, "tabs", cfg.Concurrency, "jobs", cfg.Jobs, "chrome", ccfg.ChromeBin)
	<-ctx.Done()
	log.Info("shutting down: finishing running jobs", "timeout", cfg.ShutdownTimeout)
	srv.Shutdown()
	return nil
}
