package regression

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/snapq/snapq/jobs"
)

// A suite's schedule: the cron expression, its time zone, and the checks
// that keep it from firing too often.

// Schedule runs a suite on a cron expression in a time zone.
type Schedule struct {
	Cron     string `json:"cron"`
	Timezone string `json:"timezone"`
}

// Spec is the schedule in asynq's scheduler syntax.
func (s Schedule) Spec() string { return "CRON_TZ=" + s.Timezone + " " + s.Cron }

// cronParser accepts standard five-field expressions and descriptors (@hourly).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ShortestGap is the shortest time between two consecutive activations
// among those of the week after from (at least activationsChecked of them, so
// a pattern of close activations anywhere in a day or a week shows), however
// the expression is written: "@every 1s", "* * * * *", "*/1 * * * *",
// "0,3 * * * *" or "* 6 * * 1-5".
func (s Schedule) ShortestGap(from time.Time) (time.Duration, error) {
	sched, err := cronParser.Parse(s.Spec())
	if err != nil {
		return 0, err
	}
	shortest := time.Duration(math.MaxInt64)
	prev := sched.Next(from)
	end := prev.Add(8 * 24 * time.Hour)
	for i := 0; i < activationsChecked || prev.Before(end); i++ {
		next := sched.Next(prev)
		if next.IsZero() || i >= maxActivationsChecked {
			break
		}
		shortest = min(shortest, next.Sub(prev))
		prev = next
	}
	return shortest, nil
}

// ShortestGap looks at the activations of a week, but at least
// activationsChecked and at most maxActivationsChecked of them (a week of
// five-minute activations is 2,016).
const (
	activationsChecked    = 100
	maxActivationsChecked = 5000
)

// LastActivation is the latest time at or before now the schedule fired.
func (s Schedule) LastActivation(now time.Time) (time.Time, error) {
	sched, err := cronParser.Parse(s.Spec())
	if err != nil {
		return time.Time{}, err
	}
	for _, back := range []time.Duration{2 * time.Hour, 49 * time.Hour, 32 * 24 * time.Hour, 367 * 24 * time.Hour, 5 * 366 * 24 * time.Hour} {
		t := sched.Next(now.Add(-back))
		if t.IsZero() || t.After(now) {
			continue
		}
		for {
			n := sched.Next(t)
			if n.IsZero() || n.After(now) {
				return t, nil
			}
			t = n
		}
	}
	return time.Time{}, fmt.Errorf("schedule %q has not fired in five years", s.Cron)
}

func validateSchedule(in *ScheduleInput, minInterval time.Duration, errs *jobs.FieldErrors) *Schedule {
	if in == nil {
		return nil
	}
	s := &Schedule{Cron: strings.Join(strings.Fields(in.Cron), " "), Timezone: in.Timezone}
	if s.Timezone == "" {
		s.Timezone = "UTC"
	}
	if _, err := time.LoadLocation(s.Timezone); err != nil || strings.ContainsAny(s.Timezone, " \t") {
		errs.Add("invalid_timezone", "schedule.timezone", "must be an IANA time zone such as Europe/Paris or UTC")
		return nil
	}
	if strings.Contains(s.Cron, "TZ=") {
		errs.Add("invalid_schedule", "schedule.cron", "give the time zone in schedule.timezone, not in the expression")
		return nil
	}
	if _, err := cronParser.Parse(s.Spec()); err != nil || s.Cron == "" {
		msg := "must be a five-field cron expression (minute hour day-of-month month day-of-week) or a descriptor such as @hourly"
		if err != nil {
			msg += ": " + err.Error()
		}
		errs.Add("invalid_schedule", "schedule.cron", msg)
		return nil
	}
	if err := s.checkInterval(time.Now(), minInterval); err != nil {
		errs.Add(CodeScheduleTooFrequent, "schedule.cron", err.Error())
		return nil
	}
	return s
}

// checkInterval says why the schedule fires more often than minInterval
// allows (negative: no minimum), or nil.
func (s Schedule) checkInterval(from time.Time, minInterval time.Duration) error {
	if minInterval < 0 {
		return nil
	}
	gap, err := s.ShortestGap(from)
	if err != nil {
		return err
	}
	if gap < minInterval {
		return fmt.Errorf("%q fires %s after a previous run; the minimum interval between runs is %s",
			s.Cron, shortDuration(gap), shortDuration(minInterval))
	}
	return nil
}

// shortDuration writes 5m rather than 5m0s.
func shortDuration(d time.Duration) string {
	out := d.String()
	if strings.HasSuffix(out, "m0s") {
		out = strings.TrimSuffix(out, "0s")
	}
	if strings.HasSuffix(out, "h0m") {
		out = strings.TrimSuffix(out, "0m")
	}
	return out
}
