package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
)

// Scheduling: the api runs asynq's PeriodicTaskManager with ScheduleProvider,
// which reads enabled suites from Postgres on every sync, so adding,
// changing or disabling a suite takes effect without a restart. At each
// activation the manager enqueues a regression:run task; the worker's
// SuiteRunner starts the run. Two api replicas both enqueue: the task is
// unique for a minute in Redis, and the run row is unique per (suite,
// activation) in Postgres, so one run starts.

// SuiteRunPayload is the payload of a regression:run task.
type SuiteRunPayload struct {
	SuiteID string `json:"suite_id"`
}

// Kind implements the task-kind convention.
func (SuiteRunPayload) Kind() string { return KindSuiteRun }

// ScheduleProvider implements asynq.PeriodicTaskConfigProvider on the suites table.
type ScheduleProvider struct {
	Repo Repository
}

// GetConfigs implements asynq.PeriodicTaskConfigProvider.
func (p *ScheduleProvider) GetConfigs() ([]*asynq.PeriodicTaskConfig, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	suites, err := p.Repo.ScheduledSuites(ctx)
	if err != nil {
		return nil, fmt.Errorf("list scheduled suites: %w", err)
	}
	out := make([]*asynq.PeriodicTaskConfig, 0, len(suites))
	for _, s := range suites {
		if s.Schedule == nil || !s.Enabled {
			continue
		}
		raw, _ := json.Marshal(SuiteRunPayload{SuiteID: s.ID})
		out = append(out, &asynq.PeriodicTaskConfig{
			Cronspec: s.Schedule.Spec(),
			Task:     asynq.NewTask(KindSuiteRun, raw),
			Opts:     []asynq.Option{asynq.Queue(QueueRegression), asynq.MaxRetry(3), asynq.Unique(time.Minute), asynq.Timeout(time.Minute)},
		})
	}
	return out, nil
}

// SuiteRunner runs regression:run tasks in the worker.
type SuiteRunner struct {
	Regression *Regression
	Now        func() time.Time // for tests; default time.Now
}

// ProcessTask is the asynq handler for KindSuiteRun: it starts the run of the
// schedule's latest activation, unless the suite was disabled, unscheduled or
// deleted since, or that activation already has a run.
func (r *SuiteRunner) ProcessTask(ctx context.Context, t *asynq.Task) error {
	var p SuiteRunPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || !ValidID(p.SuiteID) {
		return fmt.Errorf("bad %s payload %q: %w", KindSuiteRun, t.Payload(), asynq.SkipRetry)
	}
	log := r.Regression.logger().With("suite_id", p.SuiteID)
	s, err := r.Regression.Repo.GetSuite(ctx, p.SuiteID)
	if errors.Is(err, ErrNotFound) {
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
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	at, err := s.Schedule.LastActivation(now)
	if err != nil {
		return fmt.Errorf("suite %s: %v: %w", s.ID, err, asynq.SkipRetry)
	}
	at = at.UTC()
	run, err := r.Regression.StartRun(ctx, s, TriggerSchedule, &at)
	if errors.Is(err, ErrRunExists) {
		log.Info("scheduled run already started", "activation", at)
		return nil
	}
	if err != nil {
		return fmt.Errorf("start scheduled run of suite %s: %w", s.ID, err)
	}
	log.Info("scheduled run started", "run_id", run.ID, "activation", at, "captures", run.Counts.Pending)
	return nil
}
