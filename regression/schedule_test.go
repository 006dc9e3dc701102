package regression

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/snapq/snapq/jobs"
)

func suiteWithCron(cron string) []byte {
	return []byte(`{"name": "s", "targets": [{"url": "https://example.com/"}], "schedule": {"cron": "` + cron + `", "timezone": "Europe/Paris"}}`)
}

// A schedule that would fire more often than the minimum is refused with a
// field error naming schedule.cron and the minimum, however it is written.
func TestScheduleMinimumInterval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cron string
		ok   bool
	}{
		{name: "every second", cron: "@every 1s"},
		{name: "every minute", cron: "* * * * *"},
		{name: "every minute as a step", cron: "*/1 * * * *"},
		{name: "every four minutes", cron: "*/4 * * * *"},
		{name: "every minute of one hour", cron: "* 6 * * 1-5"},
		{name: "two minutes close together once an hour", cron: "0,3 * * * *"},
		{name: "every 4m59s", cron: "@every 4m59s"},
		{name: "every five minutes", cron: "*/5 * * * *", ok: true},
		{name: "every 5m", cron: "@every 5m", ok: true},
		{name: "hourly", cron: "@hourly", ok: true},
		{name: "weekday mornings", cron: "0 6 * * 1-5", ok: true},
		{name: "twice an hour", cron: "0,30 * * * *", ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := ParseSuite(suiteWithCron(tt.cron))
			if tt.ok {
				if err != nil || s.Schedule == nil {
					t.Fatalf("ParseSuite(%q) = %v", tt.cron, err)
				}
				return
			}
			ve, ok := err.(*jobs.ValidationError)
			if !ok || len(ve.Fields) != 1 {
				t.Fatalf("ParseSuite(%q) = %v, want one field error", tt.cron, err)
			}
			f := ve.Fields[0]
			if f.Field != "schedule.cron" || f.Code != CodeScheduleTooFrequent || !strings.Contains(f.Message, "5m") {
				t.Fatalf("field error %+v, want schedule.cron, %s, naming the minimum 5m", f, CodeScheduleTooFrequent)
			}
		})
	}
}

// The minimum is the Service's to set: a lower one accepts every minute.
func TestScheduleMinimumIntervalConfigured(t *testing.T) {
	t.Parallel()
	g := &Service{Repo: &memSuites{}, MinScheduleInterval: time.Minute}
	if _, err := g.CreateSuite(context.Background(), "", suiteWithCron("* * * * *")); err != nil {
		t.Fatalf("every minute with a 1m minimum: %v", err)
	}
	s, err := g.CreateSuite(context.Background(), "", suiteWithCron("@every 30s"))
	if err == nil || !strings.Contains(err.Error(), "1m") {
		t.Fatalf("every 30s with a 1m minimum: %v, %v", s, err)
	}
}

// A suite stored before the minimum existed does not fire faster than it.
func TestScheduleProviderSkipsTooFrequentSchedules(t *testing.T) {
	t.Parallel()
	repo := &memSuites{suites: []*Suite{
		{ID: "fast", Enabled: true, Schedule: &Schedule{Cron: "@every 1s", Timezone: "UTC"}},
		{ID: "slow", Enabled: true, Schedule: &Schedule{Cron: "*/5 * * * *", Timezone: "UTC"}},
	}}
	cfgs, err := (&ScheduleProvider{Repo: repo}).ScheduledTasks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 1 || cfgs[0].Cronspec != "CRON_TZ=UTC */5 * * * *" {
		t.Fatalf("configs %+v, want only the slow suite's", cfgs)
	}
}

// memSuites is a SuiteStore and Schedules over a slice.
type memSuites struct {
	suites []*Suite
}

func (m *memSuites) CreateSuite(_ context.Context, s *Suite, _ int) error {
	m.suites = append(m.suites, s)
	return nil
}

func (m *memSuites) GetSuite(_ context.Context, id string) (*Suite, error) {
	for _, s := range m.suites {
		if s.ID == id {
			return s, nil
		}
	}
	return nil, jobs.ErrNotFound
}

func (m *memSuites) UpdateSuite(context.Context, *Suite) error { return nil }

func (m *memSuites) CreateRun(context.Context, *Run, *jobs.Batch, []*jobs.Job, []CaptureKey, int) error {
	return nil
}

func (m *memSuites) ScheduledSuites(context.Context) ([]*Suite, error) { return m.suites, nil }
