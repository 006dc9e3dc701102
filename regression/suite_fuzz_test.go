package regression

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snapq/snapq/jobs"
)

// Fuzz input bounds: past them the fuzzer repeats itself, and every schedule
// it accepts costs a LastActivation search.
const (
	maxFuzzSuite    = 16 << 10
	maxFuzzSchedule = 256
	// lastActivationBound is how long one LastActivation search may take before the
	// fuzzer calls it a hang; the five-year search of a rare schedule takes milliseconds.
	lastActivationBound = 5 * time.Second
)

// FuzzParseSuite feeds arbitrary suite documents to the parser: either a suite
// comes back whose targets have canonical URLs and distinct names and whose
// schedule parses, or a *jobs.ValidationError whose fields carry codes.
func FuzzParseSuite(f *testing.F) {
	for _, body := range []string{
		`{"name": "home", "targets": [{"url": "https://example.com/"}]}`,
		`{"name": "shop", "targets": [{"url": "https://example.com/", "name": "home", "viewports": [{"width": 1280, "height": 720}, {"width": 375, "height": 812}]},
		  {"url": "https://example.com/cart", "options": {"wait": {"until": "networkidle"}, "actions": [{"type": "click", "selector": "#open"}]}}],
		  "options": {"viewport": {"device_scale_factor": 2}}, "threshold": 0.01, "pixel_threshold": 0.2,
		  "ignore": {"selectors": [".clock"], "rects": [{"x": 0, "y": 0, "width": 100, "height": 20}]},
		  "schedule": {"cron": "0 6 * * 1-5", "timezone": "Europe/Paris"}, "enabled": false,
		  "webhook": {"url": "https://hooks.example/r", "secret": "0123456789abcdef0123"}}`,
		`{"name": "hourly", "targets": [{"url": "https://example.com/"}], "schedule": {"cron": "@hourly"}}`,
		`{"name": "", "targets": [{"url": "ftp://x", "name": "a"}, {"url": "https://example.com/", "name": "a", "viewports": [{"width": 50, "height": 800}]}],
		  "threshold": 2, "pixel_threshold": -1, "ignore": {"selectors": [""], "rects": [{"x": 0, "y": 0, "width": 0, "height": 10}]},
		  "schedule": {"cron": "61 * * * *", "timezone": "Mars/Olympus"}, "webhook": {"url": "https://example.com/h", "secret": "short"}, "bogus": 1}`,
		`{"name": "s", "targets": [{"url": "https://example.com/"}], "webhook_url": "https://example.com/h"}`,
		`{"name": "s", "targets": [{"url": "https://example.com/"}], "schedule": {"cron": "CRON_TZ=UTC * * * * *"}}`,
		`{"name": "s", "targets": [{"url": "https://example.com/"}], "schedule": {"cron": "0 0 29 2 *", "timezone": "America/Sao_Paulo"}}`,
		`{"name": "s", "targets": [{"url": "https://example.com/"}], "schedule": {"cron": "30 2 * 3 0", "timezone": "Europe/London"}}`,
		`{"name": "s", "targets": [{"url": "https://example.com/"}], "schedule": {"cron": "", "timezone": "Local"}}`,
		`{"name": "s", "targets": []}`, `{"targets": [`, `[]`, `{}`,
	} {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > maxFuzzSuite {
			t.Skip()
		}
		s, err := ParseSuite(body)
		if err != nil {
			if s != nil {
				t.Fatalf("error %v came with a suite", err)
			}
			var ve *jobs.ValidationError
			if !errors.As(err, &ve) || len(ve.Fields) == 0 {
				t.Fatalf("error %v (%T), want a *jobs.ValidationError naming fields", err, err)
			}
			for _, fe := range ve.Fields {
				if fe.Code == "" || fe.Message == "" {
					t.Errorf("field error %+v lacks a code or a message", fe)
				}
			}
			return
		}
		if s == nil || s.Name == "" || len(s.Spec.Targets) == 0 || len(s.Spec.Targets) > MaxSuiteTargets {
			t.Fatalf("accepted suite %+v", s)
		}
		names := map[string]bool{}
		for i, tg := range s.Spec.Targets {
			if u, err := jobs.NormalizeURL(tg.URL); err != nil || u != tg.URL {
				t.Errorf("targets[%d]: URL %q re-normalizes to %q, %v", i, tg.URL, u, err)
			}
			if tg.Name == "" || names[tg.Name] {
				t.Errorf("targets[%d]: name %q is empty or taken", i, tg.Name)
			}
			names[tg.Name] = true
		}
		if _, _, err := s.Spec.Captures(); err != nil {
			t.Errorf("an accepted suite does not expand into captures: %v", err)
		}
		if s.Schedule != nil {
			checkLastActivation(t, *s.Schedule, time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC))
		}
	})
}

// FuzzSchedule checks the cron and time zone path on its own: a schedule
// validateSchedule accepts parses in asynq's syntax, and LastActivation
// finds its latest activation at or before now (or says it has none in five
// years) within lastActivationBound.
func FuzzSchedule(f *testing.F) {
	for _, s := range []struct{ cron, tz string }{
		{"* * * * *", ""}, {"0 6 * * 1-5", "Europe/Paris"}, {"@hourly", "UTC"}, {"@yearly", "Asia/Tokyo"},
		{"@every 1h", "UTC"}, {"0 0 29 2 *", "America/Sao_Paulo"}, {"0 0 30 2 *", "UTC"},
		{"30 2 * 3 0", "Europe/London"}, {"0 0 * * *", "America/Santiago"}, {"*/7 1-3 1,15 * MON", "Australia/Lord_Howe"},
		{"61 * * * *", "UTC"}, {"* * * * *", "Mars/Olympus"}, {"* * * * *", "Local"}, {"TZ=UTC * * * * *", ""},
		{"0 0 1 1 *", "../../etc/passwd"}, {"", "UTC"}, {"* * * * * *", "UTC"},
	} {
		f.Add(s.cron, s.tz, int64(1774747800)) // 2026-03-29T01:30:00Z, a DST change in Europe
	}
	f.Fuzz(func(t *testing.T, cronExpr, tz string, nowUnix int64) {
		if len(cronExpr)+len(tz) > maxFuzzSchedule {
			t.Skip()
		}
		var errs jobs.FieldErrors
		s := validateSchedule(&ScheduleInput{Cron: cronExpr, Timezone: tz}, DefaultMinScheduleInterval, &errs)
		if (s == nil) == (len(errs) == 0) {
			t.Fatalf("validateSchedule(%q, %q) = %v with errors %v", cronExpr, tz, s, errs)
		}
		if s == nil {
			for _, fe := range errs {
				if fe.Code == "" || fe.Field == "" || fe.Message == "" {
					t.Errorf("field error %+v lacks a code, field or message", fe)
				}
			}
			return
		}
		if _, err := cronParser.Parse(s.Spec()); err != nil {
			t.Fatalf("accepted schedule %q does not parse: %v", s.Spec(), err)
		}
		// now between 2001 and 2137: the years a schedule runs in.
		now := time.Unix(1e9+int64(uint32(nowUnix)), 0).UTC()
		checkLastActivation(t, *s, now)
	})
}

// checkLastActivation runs s.LastActivation(now) under lastActivationBound and
// checks that the activation is at or before now and is the latest one.
func checkLastActivation(t *testing.T, s Schedule, now time.Time) {
	t.Helper()
	type result struct {
		at  time.Time
		err error
	}
	done := make(chan result, 1)
	go func() {
		at, err := s.LastActivation(now)
		done <- result{at, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(lastActivationBound):
		t.Fatalf("LastActivation of %q at %s did not return in %s", s.Spec(), now, lastActivationBound)
	}
	if r.err != nil {
		if !strings.Contains(r.err.Error(), "five years") {
			t.Errorf("LastActivation of %q at %s: %v", s.Spec(), now, r.err)
		}
		return
	}
	if r.at.After(now) {
		t.Errorf("LastActivation of %q at %s = %s, after now", s.Spec(), now, r.at)
	}
	sched, _ := cronParser.Parse(s.Spec())
	if next := sched.Next(r.at); !next.IsZero() && !next.After(now) {
		t.Errorf("LastActivation of %q at %s = %s, but it fires again at %s", s.Spec(), now, r.at, next)
	}
}
