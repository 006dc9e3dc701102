package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"github.com/snapq/snapq/jobs"
)

// UnavailableMaxDelay caps the wait between tries of a task whose job store
// (Postgres) could not be reached: while the outage lasts, a task is retried
// after about as long as the outage has lasted so far, from the retry base
// delay up to this.
const UnavailableMaxDelay = 30 * time.Second

// ServerConfig configures a worker's Server.
type ServerConfig struct {
	Concurrency    int            // tasks at once (SNAPQ_WORKER_JOBS)
	Queues         map[string]int // queues and weights (Config.WorkerQueues); nil: Weights
	RetryBaseDelay time.Duration  // first backoff (SNAPQ_RETRY_BASE_DELAY); default 10 s
	Logger         asynq.Logger
	LogLevel       asynq.LogLevel
	Log            *slog.Logger // the server's own lines (outages of the job store); nil: slog's default
	Polling        Polling      // how often the server looks for tasks; zero fields: asynq's defaults
}

// Polling is how often a worker's asynq server looks in Redis for work. The
// defaults are asynq's; shorter intervals cost Redis round trips while the
// queues are idle, and buy nothing under load (a busy server asks for its next
// task as soon as one ends). They are for tests and tuning: the end-to-end
// tests shorten them so a first task, a retry or the next task of a chain is
// picked up sooner.
//
// What asynq v0.26.0 does not let a server set: a task's lease (30 s,
// extended every 5 s while its handler runs) and its recoverer, which hands
// the tasks of a worker that died back to the queue once their lease expired
// more than 30 s ago, checking once a minute. A killed worker's tasks
// therefore run again 60 to 120 s after it died, whatever is configured here.
type Polling struct {
	// TaskCheck is the wait between two looks at empty queues
	// (SNAPQ_QUEUE_TASK_CHECK_INTERVAL, asynq's TaskCheckInterval, default 1s).
	TaskCheck time.Duration
	// DelayedTaskCheck is the wait between two moves of the retries and
	// scheduled tasks that are due into their queues
	// (SNAPQ_QUEUE_DELAYED_TASK_CHECK_INTERVAL, asynq's
	// DelayedTaskCheckInterval, default 5s): a retry runs up to this late.
	DelayedTaskCheck time.Duration
}

// DefaultPolling is asynq's own polling.
func DefaultPolling() Polling {
	return Polling{TaskCheck: time.Second, DelayedTaskCheck: 5 * time.Second}
}

// Polling's bounds: below MinPollInterval the idle polls would load Redis for
// nothing, above MaxPollInterval a retry or a first task would wait too long.
const (
	MinPollInterval = 10 * time.Millisecond
	MaxPollInterval = time.Minute
)

// Validate checks each interval against MinPollInterval and MaxPollInterval,
// naming the variable.
func (p Polling) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"SNAPQ_QUEUE_TASK_CHECK_INTERVAL", p.TaskCheck}, {"SNAPQ_QUEUE_DELAYED_TASK_CHECK_INTERVAL", p.DelayedTaskCheck}} {
		if f.d < MinPollInterval || f.d > MaxPollInterval {
			errs = append(errs, fmt.Errorf("%s=%s: want %s to %s", f.name, f.d, MinPollInterval, MaxPollInterval))
		}
	}
	return errors.Join(errs...)
}

// Server runs a worker's tasks on asynq with snapq's retry and stop rules:
//
//   - A task that failed because the job store could not be reached
//     (jobs.ErrUnavailable) did not fail: asynq retries it without counting
//     a retry (IsFailure), after a delay that grows with the outage up to
//     UnavailableMaxDelay. An outage never uses up a job's retries.
//   - Drain stops taking tasks and lets the running ones finish; Shutdown
//     then hands whatever still runs back to the queue at once (asynq's
//     requeue: pending again, its retry count untouched) and cancels its
//     context, so another worker picks it up.
type Server struct {
	srv  *asynq.Server
	base time.Duration
	log  *slog.Logger

	mu          sync.Mutex
	running     int       // handlers that have not returned
	outageSince time.Time // first unreachable-store failure since the last task that reached it
}

// NewServer builds the worker's asynq server on conn.
func NewServer(conn asynq.RedisConnOpt, cfg ServerConfig) *Server {
	s := &Server{base: cfg.RetryBaseDelay, log: jobs.Log(cfg.Log)}
	if s.base <= 0 {
		s.base = 10 * time.Second
	}
	queues := cfg.Queues
	if queues == nil {
		queues = Weights
	}
	s.srv = asynq.NewServer(conn, asynq.Config{
		Concurrency:    cfg.Concurrency,
		Queues:         queues,
		RetryDelayFunc: s.retryDelay,
		IsFailure:      IsFailure,
		// Drain is the graceful bound; once Shutdown is called, what still runs
		// goes back to the queue without waiting (0 would mean asynq's 8 s).
		ShutdownTimeout: time.Millisecond,
		Logger:          cfg.Logger,
		LogLevel:        cfg.LogLevel,
		// Zero: asynq's defaults (DefaultPolling).
		TaskCheckInterval:        cfg.Polling.TaskCheck,
		DelayedTaskCheckInterval: cfg.Polling.DelayedTaskCheck,
	})
	return s
}

// IsFailure is the worker's asynq IsFailure: a task that could not reach the
// job store, whose target host was at its cap, or that no browser could take
// (a remote pool down or overloaded) says nothing about its job, and is
// retried without counting.
func IsFailure(err error) bool {
	return !errors.Is(err, jobs.ErrUnavailable) && !jobs.IsHostBusy(err) && !jobs.IsBrowserUnavailable(err)
}

// Start runs the handlers of mux, tracked so Drain knows when they are done.
func (s *Server) Start(mux *asynq.ServeMux) error {
	mux.Use(s.track)
	return s.srv.Start(mux)
}

// Drain stops taking new tasks and waits until every running handler has
// returned, or ctx ends; it reports whether all returned.
func (s *Server) Drain(ctx context.Context) bool {
	s.srv.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for s.inFlight() > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}

// Shutdown hands every task still running back to the queue and cancels its
// context, then waits up to grace for those handlers to return (they record
// the interrupted attempt; see jobs.Handler).
func (s *Server) Shutdown(grace time.Duration) {
	s.srv.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for s.inFlight() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (s *Server) inFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// track counts running handlers and follows the job store's reachability.
// A capture that cannot reach the store on its last retry is revoked instead
// of failed: asynq archives a failed task whose retries are used up whatever
// IsFailure says, and the api's reconciler would then fail the job as
// worker_lost. A revoked task is gone from Redis; the reconciler enqueues
// its job again once the store answers (the row is as it was: queued, or
// running until its timeout has passed).
func (s *Server) track(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		s.mu.Lock()
		s.running++
		s.mu.Unlock()
		err := next.ProcessTask(ctx, t)
		unavailable := errors.Is(err, jobs.ErrUnavailable)
		s.mu.Lock()
		s.running--
		since := s.outageSince
		switch {
		case unavailable && since.IsZero():
			s.outageSince = time.Now()
		case !unavailable:
			s.outageSince = time.Time{}
		}
		s.mu.Unlock()
		switch {
		case unavailable && since.IsZero():
			s.log.Warn("job store unreachable: tasks wait for it without using their retries", "err", err)
		case !unavailable && !since.IsZero():
			s.log.Info("job store reachable again", "after", time.Since(since).Round(time.Millisecond).String())
		}
		if unavailable {
			s.log.Debug("task waits for the job store", "task", t.Type(), "err", err)
		}
		if unavailable && t.Type() == jobs.KindCapture && lastAttempt(ctx) {
			return fmt.Errorf("%w (the reconciler enqueues the job again): %w", err, asynq.RevokeTask)
		}
		return err
	})
}

// retryDelay is RetryDelay, but for a task that could not reach the job
// store: about as long as the outage has lasted, from the base delay up to
// UnavailableMaxDelay, with up to 20% jitter.
func (s *Server) retryDelay(n int, err error, t *asynq.Task) time.Duration {
	if jobs.IsHostBusy(err) {
		// Handed back because its host was at its cap: soon again.
		return jobs.HostBusyDelay + time.Duration(rand.Int64N(int64(jobs.HostBusyDelay)/2))
	}
	if !errors.Is(err, jobs.ErrUnavailable) {
		return RetryDelay(s.base)(n, err, t)
	}
	s.mu.Lock()
	since := s.outageSince
	s.mu.Unlock()
	d := s.base
	if !since.IsZero() {
		d = max(d, time.Since(since))
	}
	d = min(d, UnavailableMaxDelay)
	return d + time.Duration(rand.Int64N(int64(d)/5+1))
}
