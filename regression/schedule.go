package regression

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/snapq/snapq/jobs"
)

// Scheduling: the api runs asynq's PeriodicTaskManager with queue's
// CronProvider over ScheduleProvider, which reads enabled suites from
// Postgres on every sync, so adding, changing or disabling a suite takes
// effect without a restart. At each activation the manager enqueues a
// regression:run task; the worker's SuiteRunner starts the run. Two api
// replicas both enqueue: the task is unique for a minute in Redis, and the
// run row is unique per (suite, activation) in Postgres, so one run starts.

// ScheduleProvider lists the suite runs to schedule from the suites table
// (queue.CronProvider's source).
type ScheduleProvider struct {
	Repo Schedules
	// MinInterval is the shortest time allowed between two activations
	// (0: DefaultMinScheduleInterval; negative: no minimum). A suite stored
	// with a schedule that fires more often (before the minimum existed, or
	// under a lower one) is left out and logged.
	MinInterval time.Duration
	Logger      *slog.Logger
}

// ScheduledTasks returns a regression:run task on its cron schedule for each
// enabled suite of a live key whose schedule is not too frequent.
func (p *ScheduleProvider) ScheduledTasks(ctx context.Context) ([]jobs.ScheduledTask, error) {
	suites, err := p.Repo.ScheduledSuites(ctx)
	if err != nil {
		return nil, fmt.Errorf("list scheduled suites: %w", err)
	}
	out := make([]jobs.ScheduledTask, 0, len(suites))
	for _, s := range suites {
		if s.Schedule == nil || !s.Enabled || s.OwnerRevoked {
			continue
		}
		if err := s.Schedule.checkInterval(time.Now(), cmp.Or(p.MinInterval, DefaultMinScheduleInterval)); err != nil {
			jobs.Log(p.Logger).Warn("suite schedule not scheduled", "suite_id", s.ID, "err", err)
			continue
		}
		out = append(out, jobs.ScheduledTask{Cronspec: s.Schedule.Spec(), Payload: SuiteRunPayload{SuiteID: s.ID}})
	}
	return out, nil
}

// SuiteRunner runs regression:run tasks in the worker.
type SuiteRunner struct {
	Regression *Service
	Now        func() time.Time // for tests; default time.Now
}

// Run is the asynq handler of KindSuiteRun (see queue.Register): it starts the run of the
// schedule's latest activation, unless the suite was disabled, unscheduled or
// deleted or its owner key revoked since, that activation already has a run, or the run would take
// the suite's owner past its in-flight cap (skipped and logged, not retried).
func (r *SuiteRunner) Run(ctx context.Context, p SuiteRunPayload) error {
	log := r.Regression.logger().With("suite_id", p.SuiteID)
	s, err := r.Regression.Repo.GetSuite(ctx, p.SuiteID)
	if errors.Is(err, jobs.ErrNotFound) {
		log.Info("scheduled run skipped: the suite was deleted")
		return nil
	}
	if err != nil {
		return fmt.Errorf("load suite %s: %w", p.SuiteID, err)
	}
	if !s.Enabled || s.Schedule == nil {
		log.Info("scheduled run skipped: the suite is disabled or has no schedule")
		return nil
	}
	if s.OwnerRevoked {
		log.Info("scheduled run skipped: the suite's API key is revoked")
		return nil
	}
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	at, err := s.Schedule.LastActivation(now)
	if err != nil {
		return fmt.Errorf("suite %s: %w: %w", s.ID, err, jobs.ErrNoRetry)
	}
	at = at.UTC()
	run, err := r.Regression.StartRun(ctx, s, TriggerSchedule, &at, RunOptions{})
	if errors.Is(err, ErrRunExists) {
		log.Info("scheduled run already started", "activation", at)
		return nil
	}
	if errors.Is(err, jobs.ErrTooManyInFlight) {
		log.Warn("scheduled run skipped: its owner has too many jobs in flight", "activation", at, "err", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("start scheduled run of suite %s: %w", s.ID, err)
	}
	log.Info("scheduled run started", "run_id", run.ID, "activation", at, "captures", run.Counts.Pending)
	return nil
}
