package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/snapq/snapq/jobs"
)

// ScheduledTasks lists the tasks to enqueue on cron schedules, read again on
// every sync of the scheduler (regression.ScheduleProvider: the enabled
// suites' schedules in Postgres), so a change needs no restart.
type ScheduledTasks interface {
	ScheduledTasks(ctx context.Context) ([]jobs.ScheduledTask, error)
}

// CronProvider is the cron provider of asynq's PeriodicTaskManager: it turns
// the tasks Source lists into periodic task configurations, each task built
// by NewTask with its kind's rule (a suite run's is unique for a minute, so
// two api replicas firing the same activation enqueue one task).
type CronProvider struct {
	Source ScheduledTasks
	// Config shards the tasks' queues; the zero value, as the api passes,
	// puts them on the plain queue names, which workers always drain.
	Config Config
	// Timeout bounds one read of Source (default 10 seconds).
	Timeout time.Duration
}

var _ asynq.PeriodicTaskConfigProvider = (*CronProvider)(nil)

// GetConfigs implements asynq.PeriodicTaskConfigProvider.
func (p *CronProvider) GetConfigs() ([]*asynq.PeriodicTaskConfig, error) {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tasks, err := p.Source.ScheduledTasks(ctx)
	if err != nil {
		return nil, fmt.Errorf("scheduled tasks: %w", err)
	}
	out := make([]*asynq.PeriodicTaskConfig, 0, len(tasks))
	for _, t := range tasks {
		task, opts, err := NewTask(t.Payload, 0, p.Config)
		if err != nil {
			return nil, err
		}
		out = append(out, &asynq.PeriodicTaskConfig{Cronspec: t.Cronspec, Task: task, Opts: opts})
	}
	return out, nil
}
