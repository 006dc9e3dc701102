package jobs

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func fields(t *testing.T, err error) []string {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error = %v, want *ValidationError", err)
	}
	var out []string
	for _, f := range ve.Fields {
		out = append(out, f.Field)
	}
	return out
}

func TestParseBatchRequestDefaults(t *testing.T) {
	t.Parallel()
	js, _, err := ParseBatchRequest([]byte(`{"urls": ["https://example.com/docs"], "targets": [{"url": "http://127.0.0.1:9999/x", "name": "Home page"}]}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []NewJob{
		{URL: "http://127.0.0.1:9999/x", Name: "Home-page", Options: DefaultOptions()},
		{URL: "https://example.com/docs", Name: "example.com-docs", Options: DefaultOptions()},
	}
	if diff := cmp.Diff(want, js); diff != "" {
		t.Errorf("jobs (-want +got):\n%s", diff)
	}
	d := DefaultOptions()
	if d.Viewport.Width != 1280 || d.Viewport.Height != 720 || d.Viewport.DeviceScaleFactor != 1 ||
		d.Screenshot.Mode != "segments" || d.Screenshot.Format != "png" || d.Screenshot.MaxSegments != 10 ||
		d.Wait.Until != "load" || d.TimeoutMS != 60000 {
		t.Errorf("defaults changed: %+v", d)
	}
}

func TestParseBatchRequestOverrides(t *testing.T) {
	t.Parallel()
	body := `{
	  "options": {"viewport": {"width": 800}, "screenshot": {"format": "jpeg", "quality": 70}, "timeout_ms": 20000},
	  "targets": [
	    {"url": "https://a.example/"},
	    {"url": "https://b.example/", "options": {"viewport": {"height": 600, "device_scale_factor": 2},
	      "screenshot": {"mode": "full", "max_segments": 50}, "wait": {"until": "networkidle", "selector": "#app", "delay_ms": 250}}}
	  ]}`
	js, _, err := ParseBatchRequest([]byte(body), 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b := js[0].Options, js[1].Options
	if a.Viewport != (Viewport{Width: 800, Height: 720, DeviceScaleFactor: 1}) || a.Screenshot.Format != "jpeg" || a.Screenshot.Quality != 70 || a.TimeoutMS != 20000 {
		t.Errorf("target 0 options = %+v", a)
	}
	if b.Viewport != (Viewport{Width: 800, Height: 600, DeviceScaleFactor: 2}) || b.Screenshot.Mode != "full" || b.Screenshot.MaxSegments != 50 ||
		b.Screenshot.Format != "jpeg" || b.Wait.Until != "networkidle" || b.Wait.Selector != "#app" || b.Wait.DelayMS != 250 {
		t.Errorf("target 1 options = %+v", b)
	}
}

func TestParseBatchRequestRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want []string
	}{
		{name: "not json", body: `{"targets": [`, want: []string{""}},
		{name: "trailing junk", body: `{"urls": ["https://a.example/"]} {"x": 1}`, want: []string{""}},
		{name: "array body", body: `[]`, want: []string{""}},
		{name: "empty", body: `{}`, want: []string{"targets"}},
		{name: "every bad url named", body: `{"targets": [{"url": "https://ok.example/"}, {"url": "file:///etc/passwd"}, {"url": ""}], "urls": ["nope"]}`,
			want: []string{"targets[1].url", "targets[2].url", "urls[0]"}},
		{name: "unknown fields anywhere", body: `{"target": [], "urls": ["https://a.example/"], "options": {"viewport": {"widht": 5}}, "labels": {}}`,
			want: []string{"options.viewport.widht", "target"}},
		{name: "unknown target field", body: `{"targets": [{"url": "https://a.example/", "nme": "x"}]}`, want: []string{"targets[0].nme"}},
		{name: "ranges", body: `{"urls": ["https://a.example/"], "options": {"viewport": {"width": 50, "height": 99999, "device_scale_factor": 0},
			"screenshot": {"mode": "tiles", "format": "gif", "quality": 101, "max_segments": 51}, "wait": {"until": "idle", "delay_ms": -1}, "timeout_ms": 10}}`,
			want: []string{"options.viewport.width", "options.viewport.height", "options.viewport.device_scale_factor",
				"options.screenshot.mode", "options.screenshot.format", "options.screenshot.quality", "options.screenshot.max_segments",
				"options.wait.until", "options.wait.delay_ms", "options.timeout_ms"}},
		{name: "max_segments zero and fractional", body: `{"targets": [{"url": "https://a.example/", "options": {"screenshot": {"max_segments": 0}}},
			{"url": "https://b.example/", "options": {"screenshot": {"max_segments": 2.5}}}]}`,
			want: []string{"targets[0].options.screenshot.max_segments", "targets[1].options.screenshot.max_segments"}},
		{name: "quality with png", body: `{"urls": ["https://a.example/"], "options": {"screenshot": {"quality": 80}}}`,
			want: []string{"options.screenshot.quality"}},
		{name: "wrong type", body: `{"targets": [{"url": "https://a.example/", "options": {"viewport": {"width": "wide"}}}]}`,
			want: []string{"targets[0].options.viewport.width"}},
		{name: "too many", body: `{"urls": [` + strings.TrimSuffix(strings.Repeat(`"https://a.example/",`, 1001), ",") + `]}`,
			want: []string{"targets"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := ParseBatchRequest([]byte(tt.body), 0)
			if diff := cmp.Diff(tt.want, fields(t, err)); diff != "" {
				t.Errorf("bad fields (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBatchStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		counts Counts
		want   BatchStatus
	}{
		{name: "all queued", counts: Counts{Queued: 3}, want: BatchQueued},
		{name: "one running", counts: Counts{Queued: 2, Running: 1}, want: BatchRunning},
		{name: "retrying job back in queue", counts: Counts{Queued: 1, Succeeded: 2}, want: BatchRunning},
		{name: "all final", counts: Counts{Succeeded: 1, Failed: 1, Canceled: 1}, want: BatchCompleted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := &Batch{Total: 3, Counts: tt.counts}
			if got := b.Status(); got != tt.want {
				t.Errorf("Status() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestPDFPreferCSSPageSize follows one option from the request body to the renderer's request.
func TestPDFPreferCSSPageSize(t *testing.T) {
	t.Parallel()
	jobs, _, err := ParseBatchRequest([]byte(`{"options": {"outputs": ["pdf"]},
		"targets": [{"url": "https://a.example/"}, {"url": "https://b.example/", "options": {"pdf": {"prefer_css_page_size": true}}}]}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := []bool{jobs[0].Options.CaptureRequest("u", "n").PDF.PreferCSSPageSize, jobs[1].Options.CaptureRequest("u", "n").PDF.PreferCSSPageSize}; got[0] || !got[1] {
		t.Errorf("prefer_css_page_size of targets = %v, want [false true]", got)
	}
	_, _, err = ParseBatchRequest([]byte(`{"urls": ["https://a.example/"], "options": {"pdf": {"prefer_css_page_size": "yes"}}}`), 0)
	if diff := cmp.Diff([]string{"options.pdf.prefer_css_page_size"}, fields(t, err)); diff != "" {
		t.Errorf("bad fields (-want +got):\n%s", diff)
	}
}
