package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hibiken/asynq"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/maintenance"
)

// Every task snapq puts on the queue, in one table: its queue, its time
// limit, how often it is retried and how long the backoff between attempts
// may grow, by kind (the kinds and payloads are jobs' tasks.go).

// Queues, and their weights in a worker (see QueueWeights).
const (
	QueueCapture    = "capture"
	QueueRegression = "regression"
	QueueWebhooks   = "webhooks"
	// QueueReports carries a run's reports to its code host (vcs:report):
	// one short request each, weighted as captures so a run's start report
	// is not starved behind the run's own captures.
	QueueReports = "reports"
)

// Weights is the share of a worker's slots each queue gets when all
// have work: captures first, webhooks never starved, code host reports as
// soon as captures (a report is one HTTP request).
var Weights = map[string]int{QueueCapture: 6, QueueRegression: 3, QueueWebhooks: 1, QueueReports: 6}

// taskRule is how one kind of task is queued and retried.
type taskRule struct {
	queue string
	// timeout bounds one attempt; 0 means the enqueuer gives it (a capture's
	// own timeout_ms plus taskSlack).
	timeout time.Duration
	// retries is the number of retries after the first attempt.
	retries func(Config) int
	// maxDelay caps the exponential backoff between attempts.
	maxDelay time.Duration
	// unique, when set, makes a second task of the same payload within it a no-op.
	unique time.Duration
	// idPrefix prefixes the task id (the payload's id), so two kinds about
	// the same job never share a task id.
	idPrefix string
}

var taskRules = map[string]taskRule{
	jobs.KindCapture: {queue: QueueCapture, retries: func(c Config) int { return c.MaxRetry },
		maxDelay: 5 * time.Minute},
	jobs.KindCompare: {queue: QueueRegression, timeout: 5 * time.Minute, retries: func(c Config) int { return max(c.MaxRetry, 3) },
		maxDelay: 5 * time.Minute, idPrefix: "compare-"},
	jobs.KindSuiteRun: {queue: QueueRegression, timeout: time.Minute, retries: func(Config) int { return 3 },
		maxDelay: 5 * time.Minute, unique: time.Minute},
	jobs.KindAuthTest: {queue: QueueCapture, timeout: 3 * time.Minute, retries: func(Config) int { return 0 },
		maxDelay: time.Minute, idPrefix: "authtest-"},
	jobs.KindWebhook: {queue: QueueWebhooks, timeout: 3 * time.Minute, retries: func(c Config) int { return c.WebhookMaxRetry },
		maxDelay: 10 * time.Minute},
	// Unique, not a task id: a pass that failed is archived, and a fixed id
	// would then refuse every later one. The api's scheduler sets the
	// uniqueness to its interval. Not retried: the next pass carries on.
	maintenance.KindSweep: {queue: QueueRegression, timeout: 30 * time.Minute, retries: func(Config) int { return 0 },
		maxDelay: time.Minute, unique: maintenance.DefaultSweepInterval},
	jobs.KindVCSReport: {queue: QueueReports, timeout: time.Minute, retries: func(c Config) int { return c.WebhookMaxRetry },
		maxDelay: 10 * time.Minute, idPrefix: "vcs-"},
	jobs.KindNotify: {queue: QueueWebhooks, timeout: 2 * time.Minute, retries: func(c Config) int { return c.WebhookMaxRetry },
		maxDelay: 10 * time.Minute, idPrefix: "notify-"},
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
// shard, by the payload's id), retries, timeout and id. timeout overrides the kind's own limit when it has none.
func NewTask(p jobs.Payload, timeout time.Duration, cfg Config) (*asynq.Task, []asynq.Option, error) {
	rule, ok := taskRules[p.Kind()]
	if !ok {
		return nil, nil, fmt.Errorf("task kind %q is not in the task table", p.Kind())
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, nil, fmt.Errorf("encode %s payload: %w", p.Kind(), err)
	}
	if rule.timeout > 0 {
		timeout = rule.timeout
	}
	opts := []asynq.Option{asynq.Queue(cfg.QueueFor(rule.queue, p.ID())), asynq.MaxRetry(max(rule.retries(cfg), 0)), asynq.Timeout(timeout)}
	if rule.unique > 0 {
		opts = append(opts, asynq.Unique(rule.unique))
	} else {
		opts = append(opts, asynq.TaskID(rule.idPrefix+p.ID()))
	}
	return asynq.NewTask(p.Kind(), raw), opts, nil
}

// Register handles P's kind on mux with fn. The payload is decoded and its id
// checked before fn runs; a payload that does not decode is dropped without
// a retry (retrying cannot fix it). wrap, when given, wraps the handler (metrics).
func Register[P jobs.Payload](mux *asynq.ServeMux, fn func(ctx context.Context, p P) error, wrap ...func(asynq.Handler) asynq.Handler) {
	var zero P
	kind := zero.Kind()
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
// capped at the task kind's maxDelay, with up to 20% jitter.
func RetryDelay(base time.Duration) asynq.RetryDelayFunc {
	if base <= 0 {
		base = 10 * time.Second
	}
	return func(n int, _ error, t *asynq.Task) time.Duration {
		ceiling := 5 * time.Minute
		if t != nil {
			if r, ok := taskRules[t.Type()]; ok {
				ceiling = r.maxDelay
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
