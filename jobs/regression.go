package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// SuiteRepository keeps suites, runs, comparisons and baselines. store.Store
// implements it.
type SuiteRepository interface {
	CreateSuite(ctx context.Context, s *Suite) error
	// GetSuite returns a suite with its newest run (LastRun).
	GetSuite(ctx context.Context, id string) (*Suite, error)
	// ListSuites returns suites newest first; owner as in ListBatches.
	ListSuites(ctx context.Context, owner string, limit int, cursor string) ([]*Suite, string, error)
	// UpdateSuite replaces a suite's name, spec, schedule, enabled flag and webhook.
	UpdateSuite(ctx context.Context, s *Suite) error
	DeleteSuite(ctx context.Context, id string) error
	// ScheduledSuites lists enabled suites that have a schedule.
	ScheduledSuites(ctx context.Context) ([]*Suite, error)

	// CreateRun writes the run's batch, its jobs, the run and its capture rows
	// in one transaction. A scheduled run whose activation already has a run is
	// ErrRunExists and writes nothing.
	CreateRun(ctx context.Context, r *Run, b *Batch, jobs []*Job, keys []CaptureKey) error
	// GetRun returns a run with its counts and comparisons.
	GetRun(ctx context.Context, id string) (*Run, error)
	// RunOfBatch returns the run a batch belongs to, or ErrNotFound.
	RunOfBatch(ctx context.Context, batchID string) (*Run, error)
	ListRuns(ctx context.Context, suiteID string, limit int, cursor string) ([]*Run, string, error)

	// CaptureOf returns the run (without its counts) and key of a run's capture
	// job; ErrNotFound when the job is not part of a run.
	CaptureOf(ctx context.Context, jobID string) (*Run, CaptureKey, error)
	// ActiveBaselines returns the active baselines of a suite's target and
	// viewport, by segment; removed segments are left out.
	ActiveBaselines(ctx context.Context, suiteID string, key CaptureKey) ([]*Baseline, error)
	// RecordComparisons replaces the comparisons of one capture job, adds its
	// diff artifacts, marks the capture compared and, when it was the run's
	// last, settles the run's status (and its run.completed webhook delivery).
	// finished reports that this call settled the run.
	RecordComparisons(ctx context.Context, runID, jobID string, cs []*Comparison, diffs []*Artifact) (finished bool, err error)
	// UncomparedCaptures lists capture jobs that are final but not compared,
	// finished before before.
	UncomparedCaptures(ctx context.Context, before time.Time, limit int) ([]string, error)
	// Approve promotes the selected comparisons' captures to new baseline
	// versions and returns the run afterwards.
	Approve(ctx context.Context, runID string, a Approval, by string) (*Run, error)
	// ListBaselines returns a suite's active baselines, or every version with history.
	ListBaselines(ctx context.Context, suiteID string, history bool) ([]*Baseline, error)
	GetBaseline(ctx context.Context, id string) (*Baseline, error)
	// RestoreBaseline adds a new active version holding an older version's image.
	RestoreBaseline(ctx context.Context, id, by string) (*Baseline, error)
}

// ErrRunExists is CreateRun's answer for a schedule activation that already has a run.
var ErrRunExists = errors.New("a run for this schedule activation exists")

// RunStatusOf derives a finished run's status from its comparison counts:
// any failure fails it; otherwise an error makes it error; new or missing
// segments need review; all passed passes.
func RunStatusOf(c RunCounts) string {
	switch {
	case c.Failed > 0:
		return RunFailed
	case c.Error > 0:
		return RunError
	case c.New > 0 || c.Missing > 0:
		return RunNeedsReview
	default:
		return RunPassed
	}
}

// Regression is what the API and the scheduler do with suites and runs.
type Regression struct {
	Repo   Repository
	Queue  Queue
	Logger *slog.Logger
}

// CreateSuite validates and stores a new suite.
func (g *Regression) CreateSuite(ctx context.Context, owner string, body []byte) (*Suite, error) {
	s, err := ParseSuite(body)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	s.ID, s.OwnerKeyID, s.CreatedAt, s.UpdatedAt = newID(), owner, now, now
	if err := g.Repo.CreateSuite(ctx, s); err != nil {
		return nil, fmt.Errorf("store suite: %w", err)
	}
	return s, nil
}

// UpdateSuite applies a PATCH: the body's top-level fields replace the
// suite's (null removes an optional one), and the result is validated whole.
// A patch without "webhook" keeps the webhook and its secret.
func (g *Regression) UpdateSuite(ctx context.Context, cur *Suite, body []byte) (*Suite, error) {
	patch, err := decodeObject(body)
	if err != nil {
		return nil, err
	}
	var errs []FieldError
	checkKeys(patch, suiteSchema, "", &errs)
	if len(errs) > 0 {
		return nil, &ValidationError{Fields: errs}
	}
	doc := cur.Input()
	_, webhookGiven := patch["webhook"]
	if cur.Webhook != nil && !webhookGiven {
		doc["webhook"] = WebhookInput{URL: cur.Webhook.URL, Secret: cur.Webhook.Secret}
	}
	for k, v := range patch {
		if v == nil {
			delete(doc, k)
			continue
		}
		doc[k] = v
	}
	merged, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	s, err := ParseSuite(merged)
	if err != nil {
		return nil, err
	}
	s.ID, s.OwnerKeyID, s.CreatedAt, s.UpdatedAt = cur.ID, cur.OwnerKeyID, cur.CreatedAt, time.Now().UTC()
	if err := g.Repo.UpdateSuite(ctx, s); err != nil {
		return nil, fmt.Errorf("update suite: %w", err)
	}
	s.LastRun = cur.LastRun
	return s, nil
}

// StartRun creates a run of the suite (a batch of capture jobs) and enqueues
// its jobs. scheduledFor is the schedule activation of a scheduled run.
func (g *Regression) StartRun(ctx context.Context, s *Suite, trigger string, scheduledFor *time.Time) (*Run, error) {
	newJobs, keys, err := s.Spec.Captures()
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	r := &Run{ID: newID(), SuiteID: s.ID, Trigger: trigger, ScheduledFor: scheduledFor, Status: RunRunning,
		Spec: s.Spec, CreatedAt: now}
	b := &Batch{ID: newID(), OwnerKeyID: s.OwnerKeyID, Total: len(newJobs), CreatedAt: now,
		Labels: map[string]string{"snapq.suite": s.ID, "snapq.run": r.ID}}
	if s.Webhook != nil {
		b.Webhook = &Webhook{URL: s.Webhook.URL, Secret: s.Webhook.Secret, Event: EventRunCompleted}
	}
	r.BatchID = b.ID
	js := make([]*Job, len(newJobs))
	for i, nj := range newJobs {
		js[i] = &Job{ID: newID(), BatchID: b.ID, Seq: i, URL: nj.URL, Name: nj.Name, Options: nj.Options,
			Status: StatusQueued, CreatedAt: now, UpdatedAt: now}
	}
	if err := g.Repo.CreateRun(ctx, r, b, js, keys); err != nil {
		return nil, err
	}
	for _, j := range js {
		if err := g.Queue.Enqueue(context.WithoutCancel(ctx), j.ID, j.Options.JobTimeout()); err != nil {
			g.logger().Warn("enqueue failed; the reconciler will retry", "job_id", j.ID, "err", err)
		}
	}
	r.Counts = RunCounts{Pending: len(js)}
	return r, nil
}

func (g *Regression) logger() *slog.Logger {
	if g.Logger != nil {
		return g.Logger
	}
	return slog.Default()
}
