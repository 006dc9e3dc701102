package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"github.com/snapq/snapq/jobs"
)

// How a task is queued, timed and retried is its kind's jobs.TaskRule,
// declared by the feature beside its payload (Payload.Rule); this file
// applies it. Tasks a process has seen (enqueued or registered a handler
// for) have their rules remembered by kind for the retry delay.

// Queues, and their weights in a worker (see Weights).
const (
	QueueCapture    = jobs.QueueCapture
	QueueRegression = jobs.QueueRegression
	QueueWebhooks   = jobs.QueueWebhooks
	// QueueReports carries a run's reports to its code host (vcs:report):
	// one short request each, weighted as captures so a run's start report
	// is not starved behind the run's own captures.
	QueueReports = jobs.QueueReports
)

// Weights is the share of a worker's slots each queue gets when all
// have work: captures first, webhooks never starved, code host reports as
// soon as captures (a report is one HTTP request).
var Weights = map[string]int{QueueCapture: 6, QueueRegression: 3, QueueWebhooks: 1, QueueReports: 6}

// rules remembers each kind's rule (kind → jobs.TaskRule) once a payload of
// it was enqueued or its handler registered, for RetryDelay.
var rules sync.Map

func remember(p jobs.Payload) jobs.TaskRule {
	r := p.Rule()
	rules.Store(p.Kind(), r)
	return r
}

// retries is the number of retries after the first attempt rule r gives with cfg.
func retries(r jobs.TaskRule, cfg Config) int {
	switch r.RetryFrom {
	case jobs.RetryCaptures:
		return max(cfg.MaxRetry, r.Retries, 0)
	case jobs.RetryDeliveries:
		return max(cfg.WebhookMaxRetry, 0)
	}
	return max(r.Retries, 0)
}

// Config configures retries of the tasks that take them from configuration.
type Config struct {
	MaxRetry int // retries of a capture after the first attempt; default 3
	// WebhookMaxRetry is the retries of a webhook delivery after its first
	// attempt (SNAPQ_WEBHOOK_MAX_RETRY, default 8; 0 here means none).
	WebhookMaxRetry int
	// Shards splits each kind into this many queues (SNAPQ_QUEUE_SHARDS; 0
	// or 1: one queue per kind under its plain name). See shard.go.
	Shards int
}

// NewTask builds the asynq task of a payload with its kind's queue (its
// shard, by the payload's id), retries, timeout and id, by its rule. timeout
// bounds an attempt when the rule gives no limit.
func NewTask(p jobs.Payload, timeout time.Duration, cfg Config) (*asynq.Task, []asynq.Option, error) {
	rule := remember(p)
	if rule.Queue == "" {
		return nil, nil, fmt.Errorf("task kind %q has no queue in its rule", p.Kind())
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, nil, fmt.Errorf("encode %s payload: %w", p.Kind(), err)
	}
	if rule.Timeout > 0 {
		timeout = rule.Timeout
	}
	opts := []asynq.Option{asynq.Queue(cfg.QueueFor(rule.Queue, p.ID())), asynq.MaxRetry(retries(rule, cfg)), asynq.Timeout(timeout)}
	if rule.Unique > 0 {
		opts = append(opts, asynq.Unique(rule.Unique))
	} else {
		opts = append(opts, asynq.TaskID(rule.IDPrefix+p.ID()))
	}
	return asynq.NewTask(p.Kind(), raw), opts, nil
}

// Register handles P's kind on mux with fn. The payload is decoded and its id
// checked before fn runs; a payload that does not decode is dropped without
// a retry (retrying cannot fix it). wrap, when given, wraps the handler (metrics).
func Register[P jobs.Payload](mux *asynq.ServeMux, fn func(ctx context.Context, p P) error, wrap ...func(asynq.Handler) asynq.Handler) {
	var zero P
	kind := zero.Kind()
	remember(zero)
	var h asynq.Handler = asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		var p P
		if err := json.Unmarshal(t.Payload(), &p); err != nil || !jobs.ValidID(p.ID()) {
			return fmt.Errorf("bad %s payload %q: %w", kind, t.Payload(), asynq.SkipRetry)
		}
		err := fn(jobs.WithLastAttempt(ctx, lastAttempt(ctx)), p)
		if errors.Is(err, jobs.ErrNoRetry) {
			return noRetry{err}
		}
		return err
	})
	for _, w := range wrap {
		h = w(h)
	}
	mux.Handle(kind, h)
}

func lastAttempt(ctx context.Context) bool {
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	return retried >= maxRetry
}

// noRetry tells asynq not to retry a failure the handler marked jobs.ErrNoRetry,
// keeping the handler's message.
type noRetry struct{ err error }

func (e noRetry) Error() string   { return e.err.Error() }
func (e noRetry) Unwrap() []error { return []error{e.err, asynq.SkipRetry} }

// RetryDelay is the worker's asynq RetryDelayFunc: exponential from base,
// capped at the task kind's rule's MaxDelay (5 minutes for a kind this
// process has neither enqueued nor registered), with up to 20% jitter.
func RetryDelay(base time.Duration) asynq.RetryDelayFunc {
	if base <= 0 {
		base = 10 * time.Second
	}
	return func(n int, _ error, t *asynq.Task) time.Duration {
		ceiling := 5 * time.Minute
		if t != nil {
			if r, ok := rules.Load(t.Type()); ok {
				ceiling = r.(jobs.TaskRule).MaxDelay
			}
		}
		d := base
		for i := 0; i < n && d < ceiling; i++ {
			d *= 2
		}
		d = min(d, ceiling)
		return d + time.Duration(rand.Int64N(int64(d)/5+1))
	}
}
