package queue

import (
	"context"
	"errors"
	"testing"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

type scheduled struct {
	tasks []jobs.ScheduledTask
	err   error
}

func (s scheduled) ScheduledTasks(context.Context) ([]jobs.ScheduledTask, error) {
	return s.tasks, s.err
}

// The provider hands asynq each scheduled payload as the task NewTask builds:
// its kind, its JSON, its kind's queue, on its cron spec.
func TestCronProviderBuildsEachScheduledTask(t *testing.T) {
	t.Parallel()
	src := scheduled{tasks: []jobs.ScheduledTask{
		{Cronspec: "CRON_TZ=UTC */5 * * * *", Payload: regression.SuiteRunPayload{SuiteID: "0190a000-0000-7000-8000-000000000001"}},
	}}
	cfgs, err := (&CronProvider{Source: src}).GetConfigs()
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 1 {
		t.Fatalf("%d configs, want 1", len(cfgs))
	}
	c := cfgs[0]
	if c.Cronspec != "CRON_TZ=UTC */5 * * * *" || c.Task.Type() != regression.KindSuiteRun ||
		string(c.Task.Payload()) != `{"suite_id":"0190a000-0000-7000-8000-000000000001"}` {
		t.Errorf("config %q %q %s, want the suite run on its spec", c.Cronspec, c.Task.Type(), c.Task.Payload())
	}
	if len(c.Opts) == 0 {
		t.Error("no options: want the kind's queue, retries and uniqueness")
	}

	if _, err := (&CronProvider{Source: scheduled{err: errors.New("db down")}}).GetConfigs(); err == nil {
		t.Error("a failed read gave no error, want the read's error")
	}
}
