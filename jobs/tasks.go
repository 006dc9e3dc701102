package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hibiken/asynq"
)

// Every task snapq puts on the queue, in one table: its kind (a stable
// string on the wire, never a Go type name), its queue, its time limit, how
// often it is retried and how long the backoff between attempts may grow.
// The payload types live here too so that enqueuing a task never needs the
// package that handles it.

// Task kinds.
const (
	KindCapture  = "capture:page"
	KindCompare  = "regression:compare"
	KindSuiteRun = "regression:run"
	KindWebhook  = "webhook:deliver"
)

// Queues, and their weights in a worker (see QueueWeights).
const (
	QueueCapture    = "capture"
	QueueRegression = "regression"
	QueueWebhooks   = "webhooks"
)

// QueueWeights is the share of a worker's slots each queue gets when all
// have work: captures first, webhooks never starved.
var QueueWeights = map[string]int{QueueCapture: 6, QueueRegression: 3, QueueWebhooks: 1}

// taskSlack is added to a job's own timeout for the wait for a free browser
// tab, uploads and bookkeeping.
const taskSlack = 2 * time.Minute

// taskRule is how one kind of task is queued and retried.
type taskRule struct {
	queue string
	// timeout bounds one attempt; 0 means the enqueuer gives it (a capture's
	// own timeout_ms plus taskSlack).
	timeout time.Duration
	// retries is the number of retries after the first attempt.
	retries func(QueueConfig) int
	// maxDelay caps the exponential backoff between attempts.
	maxDelay time.Duration
	// unique, when set, makes a second task of the same payload within it a no-op.
	unique time.Duration
	// idPrefix prefixes the task id (the payload's id), so two kinds about
	// the same job never share a task id.
	idPrefix string
}

var taskRules = map[string]taskRule{
	KindCapture: {queue: QueueCapture, retries: func(c QueueConfig) int { return c.MaxRetry },
		maxDelay: 5 * time.Minute},
	KindCompare: {queue: QueueRegression, timeout: 5 * time.Minute, retries: func(c QueueConfig) int { return max(c.MaxRetry, 3) },
		maxDelay: 5 * time.Minute, idPrefix: "compare-"},
	KindSuiteRun: {queue: QueueRegression, timeout: time.Minute, retries: func(QueueConfig) int { return 3 },
		maxDelay: 5 * time.Minute, unique: time.Minute},
	KindWebhook: {queue: QueueWebhooks, timeout: 3 * time.Minute, retries: func(c QueueConfig) int { return c.WebhookMaxRetry },
		maxDelay: 10 * time.Minute},
}

// QueueConfig configures the asynq side of jobs.
type QueueConfig struct {
	MaxRetry int // retries of a capture after the first attempt; default 3
	// WebhookMaxRetry is the retries of a webhook delivery after its first
	// attempt (SNAPQ_WEBHOOK_MAX_RETRY, default 8; 0 here means none).
	WebhookMaxRetry int
}

// Payload is a typed task payload: a JSON struct with a stable kind.
type Payload interface {
	// Kind is the task kind, one of the Kind* constants.
	Kind() string
	// ID identifies what the task is about (a job, a delivery, a suite); it
	// makes the task id, so enqueuing the same work twice is a no-op.
	ID() string
}

// CapturePayload is the payload of a capture:page task.
type CapturePayload struct {
	JobID string `json:"job_id"`
}

// ComparePayload is the payload of a regression:compare task.
type ComparePayload struct {
	JobID string `json:"job_id"`
}

// SuiteRunPayload is the payload of a regression:run task.
type SuiteRunPayload struct {
	SuiteID string `json:"suite_id"`
}

// WebhookPayload is the payload of a webhook:deliver task.
type WebhookPayload struct {
	DeliveryID string `json:"delivery_id"`
}

func (CapturePayload) Kind() string  { return KindCapture }
func (ComparePayload) Kind() string  { return KindCompare }
func (SuiteRunPayload) Kind() string { return KindSuiteRun }
func (WebhookPayload) Kind() string  { return KindWebhook }

func (p CapturePayload) ID() string  { return p.JobID }
func (p ComparePayload) ID() string  { return p.JobID }
func (p SuiteRunPayload) ID() string { return p.SuiteID }
func (p WebhookPayload) ID() string  { return p.DeliveryID }

// NewTask builds the asynq task of a payload with its kind's queue, retries,
// timeout and id. timeout overrides the kind's own limit when it has none.
func NewTask(p Payload, timeout time.Duration, cfg QueueConfig) (*asynq.Task, []asynq.Option, error) {
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
	opts := []asynq.Option{asynq.Queue(rule.queue), asynq.MaxRetry(max(rule.retries(cfg), 0)), asynq.Timeout(timeout)}
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
func Register[P Payload](mux *asynq.ServeMux, fn func(ctx context.Context, p P) error, wrap ...func(asynq.Handler) asynq.Handler) {
	var zero P
	kind := zero.Kind()
	var h asynq.Handler = asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		var p P
		if err := json.Unmarshal(t.Payload(), &p); err != nil || !ValidID(p.ID()) {
			return fmt.Errorf("bad %s payload %q: %w", kind, t.Payload(), asynq.SkipRetry)
		}
		return fn(ctx, p)
	})
	for _, w := range wrap {
		h = w(h)
	}
	mux.Handle(kind, h)
}

// LastAttempt reports whether the task running in ctx will not be retried
// after a failure.
func LastAttempt(ctx context.Context) bool {
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	return retried >= maxRetry
}

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
