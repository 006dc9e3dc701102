package regression

import (
	"errors"
	"image"
	"reflect"
	"testing"
	"time"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/jobs"
)

func fieldsOf(t *testing.T, err error) []string {
	t.Helper()
	var ve *jobs.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v, want a ValidationError", err)
	}
	var out []string
	for _, f := range ve.Fields {
		out = append(out, f.Field)
	}
	return out
}

func TestParseSuiteNamesEveryBadField(t *testing.T) {
	_, err := ParseSuite([]byte(`{"name": "", "targets": [
		{"url": "ftp://x", "name": "a"},
		{"url": "https://example.com/", "name": "a", "viewports": [{"width": 50, "height": 800}]},
		{"url": "https://example.com/b", "options": {"viewport": {"width": 5}}}],
		"threshold": 2, "pixel_threshold": -1,
		"ignore": {"selectors": [""], "rects": [{"x": 0, "y": 0, "width": 0, "height": 10}]},
		"schedule": {"cron": "61 * * * *", "timezone": "Mars/Olympus"},
		"webhook": {"url": "https://example.com/h", "secret": "short"}, "bogus": 1}`))
	got := fieldsOf(t, err)
	want := []string{"bogus"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("unknown key first: fields %v, want %v", got, want)
	}
	_, err = ParseSuite([]byte(`{"name": "", "targets": [
		{"url": "ftp://x", "name": "a"},
		{"url": "https://example.com/", "name": "a", "viewports": [{"width": 50, "height": 800}]},
		{"url": "https://example.com/b", "options": {"viewport": {"width": 5}}}],
		"threshold": 2, "pixel_threshold": -1,
		"ignore": {"selectors": [""], "rects": [{"x": 0, "y": 0, "width": 0, "height": 10}]},
		"schedule": {"cron": "61 * * * *", "timezone": "Mars/Olympus"},
		"webhook": {"url": "https://example.com/h", "secret": "short"}}`))
	got = fieldsOf(t, err)
	want = []string{"name", "targets[0].url", "targets[1].name", "targets[1].viewports[0].width",
		"targets[2].options.viewport.width", "threshold", "pixel_threshold", "ignore.selectors[0]", "ignore.rects[0]",
		"schedule.timezone", "webhook.secret"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fields\n got %v\nwant %v", got, want)
	}
	_, err = ParseSuite([]byte(`{"name": "s", "targets": [{"url": "https://example.com/"}], "webhook_url": "https://example.com/h"}`))
	if got := fieldsOf(t, err); !reflect.DeepEqual(got, []string{"webhook_url"}) {
		t.Fatalf("webhook_url: fields %v", got)
	}
	_, err = ParseSuite([]byte(`{"name": "s", "targets": [{"url": "https://example.com/"}], "schedule": {"cron": "every minute"}}`))
	if got := fieldsOf(t, err); !reflect.DeepEqual(got, []string{"schedule.cron"}) {
		t.Fatalf("bad cron: fields %v", got)
	}
}

func TestParseSuiteDefaultsAndCaptures(t *testing.T) {
	s, err := ParseSuite([]byte(`{"name": " site ", "targets": [
		{"url": "https://example.com/", "name": "home", "viewports": [{"width": 1280, "height": 720}, {"width": 390, "height": 844}]},
		{"url": "https://example.com/docs", "options": {"screenshot": {"format": "jpeg", "quality": 80}, "outputs": ["markdown"]}}],
		"options": {"timeout_ms": 20000}, "ignore": {"selectors": ["#clock"]},
		"schedule": {"cron": "*/5  * * * *", "timezone": "Europe/Paris"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "site" || !s.Enabled || s.Spec.Threshold != 0 || s.Spec.PixelThreshold != DefaultPixelThreshold {
		t.Fatalf("defaults: %+v", s)
	}
	if s.Schedule == nil || s.Schedule.Spec() != "CRON_TZ=Europe/Paris */5 * * * *" {
		t.Fatalf("schedule %+v", s.Schedule)
	}
	js, keys, err := s.Spec.Captures()
	if err != nil {
		t.Fatal(err)
	}
	wantNames := []string{"home-1280x720", "home-390x844", "example.com-docs-1280x720"}
	if len(js) != 3 {
		t.Fatalf("%d captures, want 3", len(js))
	}
	for i, j := range js {
		if j.Name != wantNames[i] {
			t.Errorf("capture %d named %q, want %q", i, j.Name, wantNames[i])
		}
		o := j.Options
		if o.Screenshot.Format != "png" || o.Screenshot.Quality != 0 || !reflect.DeepEqual(o.Outputs, []string{"screenshot"}) ||
			!o.Prepare.DisableAnimations || !o.Emulate.ReducedMotion || !o.Wait.Fonts || !o.Wait.Images ||
			o.Stabilize != StabilizeRetakes || !reflect.DeepEqual(o.MaskSelectors, []string{"#clock"}) || o.TimeoutMS != 20000 {
			t.Errorf("capture %d options not stabilized: %+v", i, o)
		}
	}
	if js[1].Options.Viewport.Width != 390 || js[1].Options.Viewport.Height != 844 || keys[1] != (CaptureKey{Target: "home", Viewport: "390x844"}) {
		t.Errorf("second viewport: %+v %+v", js[1].Options.Viewport, keys[1])
	}
}

func TestLastActivation(t *testing.T) {
	paris, _ := time.LoadLocation("Europe/Paris")
	cases := []struct {
		s    Schedule
		now  time.Time
		want time.Time
	}{
		{Schedule{"* * * * *", "UTC"}, time.Date(2026, 11, 30, 8, 7, 31, 0, time.UTC), time.Date(2026, 11, 30, 8, 7, 0, 0, time.UTC)},
		{Schedule{"*/5 * * * *", "UTC"}, time.Date(2026, 11, 30, 8, 9, 59, 0, time.UTC), time.Date(2026, 11, 30, 8, 5, 0, 0, time.UTC)},
		{Schedule{"0 3 * * *", "Europe/Paris"}, time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC), time.Date(2026, 11, 29, 3, 0, 0, 0, paris)},
		{Schedule{"0 0 1 1 *", "UTC"}, time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		got, err := c.s.LastActivation(c.now)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("%v at %v: %v, %v; want %v", c.s, c.now, got, err, c.want)
		}
	}
}

func TestRunStatusOf(t *testing.T) {
	cases := map[RunStatus]RunCounts{
		RunPassed:      {Total: 3, Passed: 3},
		RunFailed:      {Total: 3, Passed: 1, Failed: 1, New: 1},
		RunNeedsReview: {Total: 2, Passed: 1, Missing: 1},
		RunError:       {Total: 2, New: 1, Error: 1},
	}
	for want, c := range cases {
		if got := RunStatusOf(c); got != want {
			t.Errorf("RunStatusOf(%+v) = %s, want %s", c, got, want)
		}
	}
}

func TestMaskForSegments(t *testing.T) {
	rects := []Rect{{X: 10, Y: 100, Width: 50, Height: 20}, {X: 0, Y: 700, Width: 100, Height: 40}}
	// First segment (offset 0) at device scale 2: both rects, doubled.
	got := maskFor(rects, 2, 0)
	want := []image.Rectangle{image.Rect(20, 200, 120, 240), image.Rect(0, 1400, 200, 1480)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("segment 1: %v, want %v", got, want)
	}
	// Second segment of a 720 px viewport at scale 1: the first rect is above it,
	// the second straddles the cut.
	got = maskFor(rects, 1, 720)
	want = []image.Rectangle{image.Rect(0, 0, 100, 20)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("segment 2: %v, want %v", got, want)
	}
}

func TestIsSegment(t *testing.T) {
	for file, want := range map[string]bool{
		"home-1280x720.png": true, "home-1280x720-001.png": true, "home-1280x720-050.png": true,
		"home-1280x720-after-login.png": false, "home-1280x720-diff-001.png": false, "other.png": false,
	} {
		if got := isSegment("home-1280x720", file); got != want {
			t.Errorf("isSegment(%q) = %v, want %v", file, got, want)
		}
	}
}

func TestSuiteDiffSettings(t *testing.T) {
	t.Parallel()
	s, err := ParseSuite([]byte(`{"name": "x", "targets": [{"url": "https://example.com/"}], "diff": {"mode": "pixel", "color_metric": "oklab"}}`))
	if err != nil || s.Spec.Diff != (DiffSettings{Mode: DiffPixel, ColorMetric: MetricOKLab}) {
		t.Fatalf("diff settings: %+v, %v", s, err)
	}
	_, err = ParseSuite([]byte(`{"name": "x", "targets": [{"url": "https://example.com/"}], "diff": {"mode": "fuzzy", "color_metric": "lab"}}`))
	var ve *jobs.ValidationError
	if !errors.As(err, &ve) || len(ve.Fields) != 2 || ve.Fields[0].Field != "diff.mode" || ve.Fields[1].Field != "diff.color_metric" {
		t.Fatalf("bad diff settings: %v", err)
	}
	if got := (DiffSettings{}).ModeFor(capture.ModeSegments); got != DiffAligned {
		t.Errorf("segments default %q, want aligned", got)
	}
	if got := (DiffSettings{}).ModeFor(capture.ModeFull); got != DiffPixel {
		t.Errorf("full default %q, want pixel", got)
	}
}
