package store

import (
	"context"

	"github.com/snapq/snapq/events"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

// The store announces each job and comparison state change once its
// transaction has committed: a job event and the batch's counts after it
// (a comparison event per comparison and the run's counts). That is the one
// place every path goes through (the worker's attempts, the api's cancel,
// the reconciler's requeue and failure). Announcing is best effort
// (events.Publisher); the streams' final event comes from Postgres.

// SetEvents makes the store publish state changes to p; nil publishes none.
// Call it before the store is used.
func (s *Store) SetEvents(p *events.Publisher) { s.events = p }

// jobChanged is one job's committed change, for publishJobs.
type jobChanged struct {
	id, name, url, status string
	attempt               int
	err                   *jobs.JobError
}

// publishJobs announces changes of batchID's jobs and, after them, the
// batch's counts as they are now.
func (s *Store) publishJobs(ctx context.Context, batchID string, changes ...jobChanged) {
	if s.events == nil || len(changes) == 0 {
		return
	}
	at := s.events.Time()
	evs := make([]events.Event, 0, len(changes)+1)
	for _, c := range changes {
		e := events.Job{BatchID: batchID, JobID: c.id, Name: c.name, URL: c.url, Status: c.status, Attempt: c.attempt, At: at}
		if c.err != nil {
			e.Error = &events.ErrorInfo{Code: c.err.Code, Message: c.err.Message}
		}
		evs = append(evs, events.Event{Type: events.TypeJob, Data: e})
	}
	final := false
	ctx, cancel := jobs.Bookkeeping(ctx)
	defer cancel()
	if b, err := s.GetBatch(ctx, batchID); err == nil {
		final = b.Status() == jobs.BatchCompleted
		evs = append(evs, events.Event{Type: events.TypeBatch, Data: events.Batch{BatchID: b.ID, Status: string(b.Status()), Counts: b.Counts}})
	}
	s.events.Publish(ctx, events.BatchStream(batchID), final, evs...)
}

// publishComparisons announces the comparisons recorded for a run and, after
// them, the run's status and counts as they are now.
func (s *Store) publishComparisons(ctx context.Context, runID string, cs []*regression.Comparison) {
	if s.events == nil {
		return
	}
	at := s.events.Time()
	evs := make([]events.Event, 0, len(cs)+1)
	for _, c := range cs {
		evs = append(evs, events.Event{Type: events.TypeComparison, Data: events.Comparison{RunID: runID, ComparisonID: c.ID,
			JobID: c.JobID, Target: c.Target, Viewport: c.Viewport, Segment: c.Segment, Status: string(c.Status),
			DiffPixels: c.DiffPixels, DiffRatio: c.DiffRatio, Message: c.Message, At: at}})
	}
	final := false
	ctx, cancel := jobs.Bookkeeping(ctx)
	defer cancel()
	if r, err := s.getRunWhere(ctx, nil, `r.id = $1`, runID); err == nil {
		final = r.Status != regression.RunRunning
		evs = append(evs, events.Event{Type: events.TypeRun, Data: events.Run{RunID: r.ID, Status: string(r.Status), Counts: r.Counts}})
	}
	s.events.Publish(ctx, events.RunStream(runID), final, evs...)
}
