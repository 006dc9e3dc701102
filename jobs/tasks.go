package jobs

import (
	"context"
	"errors"
	"time"
)

// The tasks snapq puts on the queue: their kinds (stable strings on the
// wire, never Go type names) and typed payloads. How each kind is queued,
// timed and retried is the queue package's task table (queue/tasks.go).

// Task kinds.
const (
	KindCapture  = "capture:page"
	KindCompare  = "regression:compare"
	KindSuiteRun = "regression:run"
	KindWebhook  = "webhook:deliver"
	// KindAuthTest runs an auth profile's recipe now (POST /v1/auth-profiles/:id/test).
	KindAuthTest = "auth:test"
)

// TaskSlack is added to a job's own timeout for its task's time limit: the
// wait for a free browser tab, uploads and bookkeeping.
const TaskSlack = 2 * time.Minute

// Payload is a typed task payload: a JSON struct with a stable kind.
type Payload interface {
	// Kind is the task kind, one of the Kind* constants.
	Kind() string
	// ID identifies what the task is about (a job, a delivery, a suite); it
	// makes the task id, so enqueuing the same work twice is a no-op.
	ID() string
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

// AuthTestPayload is the payload of an auth:test task.
type AuthTestPayload struct {
	TestID    string `json:"test_id"`
	ProfileID string `json:"profile_id"`
}

func (AuthTestPayload) Kind() string { return KindAuthTest }

func (p AuthTestPayload) ID() string { return p.TestID }

func (CapturePayload) Kind() string  { return KindCapture }
func (ComparePayload) Kind() string  { return KindCompare }
func (SuiteRunPayload) Kind() string { return KindSuiteRun }
func (WebhookPayload) Kind() string  { return KindWebhook }

func (p CapturePayload) ID() string  { return p.JobID }
func (p ComparePayload) ID() string  { return p.JobID }
func (p SuiteRunPayload) ID() string { return p.SuiteID }
func (p WebhookPayload) ID() string  { return p.DeliveryID }

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

// KindVCSReport reports a run to its suite's code host (vcs package).
const KindVCSReport = "vcs:report"

// VCSReportPayload is the payload of a vcs:report task. ReportID (a fresh id
// per report: a run is reported when it starts, ends and is approved) makes
// the task id. What the report says is decided when its event happens and
// travels here, never re-read when the task runs: Seq orders a run's reports
// (1 the start, 2 the end, 3 and up approvals; a task older than the run's
// last delivered report is dropped), RunStatus, State and Description are
// the run's status, the commit state and its description at that moment.
// A payload without Seq (enqueued by an older version) reports the run as
// it is when the task runs.
type VCSReportPayload struct {
	ReportID    string `json:"report_id"`
	RunID       string `json:"run_id"`
	Seq         int    `json:"seq,omitempty"`
	RunStatus   string `json:"run_status,omitempty"`
	State       string `json:"state,omitempty"`
	Description string `json:"description,omitempty"`
}

func (VCSReportPayload) Kind() string { return KindVCSReport }
func (p VCSReportPayload) ID() string { return p.ReportID }

// KindNotify delivers one of a run's notifications (notify package).
const KindNotify = "notify:deliver"

// NotifyPayload is the payload of a notify:deliver task; the notification's
// id makes the task id.
type NotifyPayload struct {
	NotificationID string `json:"notification_id"`
}

func (NotifyPayload) Kind() string { return KindNotify }
func (p NotifyPayload) ID() string { return p.NotificationID }
