// Command worker runs capture tasks: one Chromium per process, driven by
// go-rod, artifacts uploaded to S3, results written to Postgres.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

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
	var r env.Reader
	log := env.Logger(&r, "worker")
	dbURL := env.DatabaseURL(&r)
	redisOpt := env.Redis(&r)
	s3cfg := env.S3(&r)
	concurrency := r.Int("SNAPQ_WORKER_CONCURRENCY", 2)
	// Jobs in flight beyond the browser tabs upload and write results while
	// the tabs render the next pages.
	inflight := r.Int("SNAPQ_WORKER_JOBS", 2*concurrency)
	shutdownTimeout := r.Duration("SNAPQ_SHUTDOWN_TIMEOUT", 30*time.Second)
	retryBase := r.Duration("SNAPQ_RETRY_BASE_DELAY", 10*time.Second)
	maxRetry := r.Int("SNAPQ_MAX_RETRY", 3) // for the capture jobs of scheduled runs
	wcfg := webhook.DefaultConfig()
	wcfg.MaxRetry = r.Int("SNAPQ_WEBHOOK_MAX_RETRY", wcfg.MaxRetry)
	wcfg.Timeout = r.Duration("SNAPQ_WEBHOOK_TIMEOUT", wcfg.Timeout)
	ccfg := capture.DefaultConfig()
	ccfg.ChromeBin = r.String("SNAPQ_CHROME_BIN", ccfg.ChromeBin)
	ccfg.RemoteURL = r.String("SNAPQ_CHROME_URL", "")
	ccfg.Tabs = concurrency
	ccfg.BrowserRecycleAfter = r.Int("SNAPQ_BROWSER_RECYCLE_AFTER", ccfg.BrowserRecycleAfter)
	ccfg.TabRecycleAfter = r.Int("SNAPQ_TAB_RECYCLE_AFTER", ccfg.TabRecycleAfter)
	ccfg.CallTimeout = r.Duration("SNAPQ_CAPTURE_CALL_TIMEOUT", ccfg.CallTimeout)
	ccfg.NoSandbox = r.Bool("SNAPQ_CHROME_NO_SANDBOX", false)
	allow, allowErr := egress.ParseCIDRs(r.String("SNAPQ_EGRESS_ALLOW_CIDRS", ""))
	if allowErr != nil {
		allowErr = fmt.Errorf("SNAPQ_EGRESS_ALLOW_CIDRS: %w", allowErr)
	}
	ecfg := egress.DefaultConfig()
	ecfg.Policy = egress.NewPolicy(allow)
	ecfg.Logger = log.With("component", "egress")
	ccfg.Logger = log
	if concurrency < 1 || concurrency > 64 {
		return fmt.Errorf("SNAPQ_WORKER_CONCURRENCY=%d: want 1 to 64", concurrency)
	}
	if inflight < concurrency {
		return fmt.Errorf("SNAPQ_WORKER_JOBS=%d: want at least SNAPQ_WORKER_CONCURRENCY (%d)", inflight, concurrency)
	}
	if err := errors.Join(r.Err(), allowErr, s3cfg.Validate(), ccfg.Validate(), ecfg.Validate(), wcfg.Validate()); err != nil {
		return err
	}

	st, err := store.Open(ctx, dbURL)
	if err != nil {
		return err
	}
	defer st.Close()
	objects, err := artifacts.New(ctx, s3cfg)
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
	tasks := queue.NewAsynqQueue(redisOpt, queue.Config{MaxRetry: maxRetry, WebhookMaxRetry: wcfg.MaxRetry})
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
		Concurrency:     inflight,
		Queues:          queue.Weights,
		RetryDelayFunc:  queue.RetryDelay(retryBase),
		ShutdownTimeout: shutdownTimeout,
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
	if addr := r.String("SNAPQ_METRICS_ADDR", ""); addr != "" {
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
	if addr := r.String("SNAPQ_PPROF_ADDR", ""); addr != "" {
		go servePprof(addr, log)
	}
	log.Info("worker started", "egress_allow", allow, "tabs", concurrency, "jobs", inflight, "chrome", ccfg.ChromeBin)
	<-ctx.Done()
	log.Info("shutting down: finishing running jobs", "timeout", shutdownTimeout)
	srv.Shutdown()
	return nil
}
