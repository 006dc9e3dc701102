package jobs

import (
	"context"
	"errors"
	"time"
)

// Tasks: what every task payload is (Payload) and how a kind of task is
// queued (TaskRule). Each feature declares its own payload, kind and rule
// beside its handler (the capture's here; regression/tasks.go,
// webhook/task.go, notify/task.go, authprofile/task.go,
// maintenance/task.go); the queue package applies the rules and is the only
// one that knows asynq.

// KindCapture is the kind of a job's capture task.
const KindCapture = "capture:page"

// Queues a TaskRule names; a worker weighs them (queue.Weights).
const (
	QueueCapture    = "capture"
	QueueRegression = "regression"
	QueueWebhooks   = "webhooks"
	// QueueReports carries a run's reports to its code host (vcs:report).
	QueueReports = "reports"
)

// TaskSlack is added to a job's own timeout for its task's time limit: the
// wait for a free browser tab, uploads and bookkeeping.
const TaskSlack = 2 * time.Minute

// Payload is a typed task payload: a JSON struct with a stable kind.
type Payload interface {
	// Kind is the task kind, a stable string ("capture:page").
	Kind() string
	// ID identifies what the task is about (a job, a delivery, a suite); it
	// makes the task id, so enqueuing the same work twice is a no-op.
	ID() string
	// Rule is how tasks of this kind are queued and retried; the same for
	// every payload of the kind.
	Rule() TaskRule
}

// RetryFrom says where a task rule's number of retries comes from.
type RetryFrom int

// Where retries come from.
const (
	// RetryFixed: TaskRule.Retries.
	RetryFixed RetryFrom = iota
	// RetryCaptures: the worker's capture retries (SNAPQ_MAX_RETRY), at
	// least TaskRule.Retries.
	RetryCaptures
	// RetryDeliveries: the worker's delivery retries (SNAPQ_WEBHOOK_MAX_RETRY).
	RetryDeliveries
)

// TaskRule is how one kind of task is queued, timed and retried.
type TaskRule struct {
	Queue string // one of the Queue* names
	// Timeout bounds one attempt; 0 means the enqueuer gives it (a capture's
	// own timeout plus TaskSlack).
	Timeout time.Duration
	// Retries after the first attempt, as RetryFrom says.
	Retries   int
	RetryFrom RetryFrom
	// MaxDelay caps the exponential backoff between attempts.
	MaxDelay time.Duration
	// Unique, when set, makes a second task of the same payload within it a
	// no-op instead of a task id.
	Unique time.Duration
	// IDPrefix prefixes the task id (the payload's id), so two kinds about
	// the same job never share a task id.
	IDPrefix string
}

// ScheduledTask is a task enqueued on a cron schedule (queue.CronProvider):
// Cronspec in asynq's syntax ("CRON_TZ=Europe/Paris 0 3 * * *", "@every 1h").
type ScheduledTask struct {
	Cronspec string
	Payload  Payload
}

// CapturePayload is the payload of a capture:page task. Whoever enqueues
// the job knows its URL and options, so the task carries what the worker
// needs before the job starts: the target host and the job's host cap
// (hostcap.go) and its timeout, and the worker takes the host's slot
// without reading the job first. A payload without Host (one enqueued by an
// older version) makes the worker read the job for them.
type CapturePayload struct {
	JobID string `json:"job_id"`
	// Host is TargetHost of the job's URL.
	Host string `json:"host,omitempty"`
	// HostConcurrency is the job's host_concurrency option (0: the worker's
	// default).
	HostConcurrency int `json:"host_concurrency,omitempty"`
	// TimeoutMS is the job's own timeout (Options.TimeoutMS).
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// CaptureTask is the payload of job id's capture task: of the job at url
// with the resolved options o.
func CaptureTask(id, url string, o Options) CapturePayload {
	return CapturePayload{JobID: id, Host: TargetHost(url), HostConcurrency: o.HostConcurrency, TimeoutMS: int64(o.TimeoutMS)}
}

// Timeout is the job's own timeout the payload carries.
func (p CapturePayload) Timeout() time.Duration { return time.Duration(p.TimeoutMS) * time.Millisecond }

func (CapturePayload) Kind() string { return KindCapture }
func (p CapturePayload) ID() string { return p.JobID }

// Rule: on the capture queue, retried SNAPQ_MAX_RETRY times, timed by the
// job's own timeout.
func (CapturePayload) Rule() TaskRule {
	return TaskRule{Queue: QueueCapture, RetryFrom: RetryCaptures, MaxDelay: 5 * time.Minute}
}

// ErrNoRetry marks a task failure that retrying cannot fix (a bad payload,
// a job that no longer exists, a final failure already recorded): the queue
// drops the task instead of retrying it.
var ErrNoRetry = errors.New("skip retry")

type lastAttemptKey struct{}

// WithLastAttempt records in ctx whether the task running in it is on its
// last attempt (the queue adapter sets it).
func WithLastAttempt(ctx context.Context, last bool) context.Context {
	return context.WithValue(ctx, lastAttemptKey{}, last)
}

// LastAttempt reports whether the task running in ctx will not be retried
// after a failure; outside a queue there is no retry.
func LastAttempt(ctx context.Context) bool {
	last, ok := ctx.Value(lastAttemptKey{}).(bool)
	return last || !ok
}
