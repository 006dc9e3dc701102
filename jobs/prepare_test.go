package jobs

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/snapq/snapq/capture"
)

func TestPrepareOptionsResolve(t *testing.T) {
	t.Parallel()
	body := `{
	  "options": {
	    "emulate": {"user_agent": "snapq-test", "headers": {"X-Test": "1"}, "locale": "de-DE",
	      "timezone": "Europe/Berlin", "color_scheme": "dark", "reduced_motion": true, "media": "print",
	      "cookies": [{"name": "sid", "value": "abc", "url": "http://127.0.0.1:9999/", "same_site": "Lax", "expires": 2000000000}]},
	    "prepare": {"hide_selectors": [".banner"], "remove_selectors": ["#ad"], "css": "body{}", "script": "1+1",
	      "script_required": true, "disable_animations": true},
	    "screenshot": {"selector": "#main"},
	    "scroll": {"enabled": true, "step_px": 500, "delay_ms": 50, "max_ms": 2000},
	    "wait": {"fonts": true, "images": true, "hidden_selector": ".spinner", "network_idle_ms": 300}
	  },
	  "targets": [
	    {"url": "http://127.0.0.1:9999/a"},
	    {"url": "http://127.0.0.1:9999/b", "options": {"emulate": {"device": "iphone-15", "color_scheme": "light"}, "viewport": {"width": 500}}}
	  ]}`
	js, _, err := ParseBatchRequest([]byte(body), 0)
	if err != nil {
		t.Fatal(err)
	}
	r := js[0].Options.CaptureRequest(js[0].URL, js[0].Name)
	want := capture.Emulate{UserAgent: "snapq-test", Headers: map[string]string{"X-Test": "1"}, Locale: "de-DE",
		Timezone: "Europe/Berlin", ColorScheme: "dark", ReducedMotion: true, Media: "print",
		Cookies: []capture.Cookie{{Name: "sid", Value: "abc", URL: "http://127.0.0.1:9999/", SameSite: "Lax", Expires: 2000000000}}}
	if diff := cmp.Diff(want, r.Emulate); diff != "" {
		t.Errorf("emulate (-want +got):\n%s", diff)
	}
	wantPrep := capture.Prepare{HideSelectors: []string{".banner"}, RemoveSelectors: []string{"#ad"}, CSS: "body{}",
		Script: "1+1", ScriptRequired: true, DisableAnimations: true}
	if diff := cmp.Diff(wantPrep, r.Prepare); diff != "" {
		t.Errorf("prepare (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(capture.Scroll{Enabled: true, Step: 500, Delay: 50 * time.Millisecond, Max: 2 * time.Second}, r.Scroll); diff != "" {
		t.Errorf("scroll (-want +got):\n%s", diff)
	}
	if r.Screenshot.Selector != "#main" {
		t.Errorf("screenshot selector = %q", r.Screenshot.Selector)
	}
	if w := r.Wait; !w.Fonts || !w.Images || w.HiddenSelector != ".spinner" || w.NetworkIdle != 300*time.Millisecond {
		t.Errorf("wait = %+v", w)
	}

	// The device preset fills what the target did not give; its explicit width wins.
	b := js[1].Options
	d := Devices["iphone-15"]
	if b.Viewport != (Viewport{Width: 500, Height: d.Height, DeviceScaleFactor: d.DeviceScaleFactor}) || !b.Emulate.Mobile || !b.Emulate.Touch ||
		b.Emulate.ColorScheme != "light" {
		t.Errorf("device options = %+v %+v", b.Viewport, b.Emulate)
	}
	// The batch's explicit user agent wins over the preset's.
	if b.Emulate.UserAgent != "snapq-test" {
		t.Errorf("user agent = %q, want the explicit one", b.Emulate.UserAgent)
	}
}

func TestPrepareOptionsInvalid(t *testing.T) {
	t.Parallel()
	long := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = 'a'
		}
		return string(b)
	}
	tests := []struct {
		name    string
		options string
		field   string
	}{
		{"long user agent", `{"emulate": {"user_agent": "` + long(513) + `"}}`, "options.emulate.user_agent"},
		{"host header", `{"emulate": {"headers": {"host": "x"}}}`, "options.emulate.headers.host"},
		{"cookie header", `{"emulate": {"headers": {"Cookie": "a=b"}}}`, "options.emulate.headers.Cookie"},
		{"hop-by-hop header", `{"emulate": {"headers": {"Transfer-Encoding": "chunked"}}}`, "options.emulate.headers.Transfer-Encoding"},
		{"proxy header", `{"emulate": {"headers": {"Proxy-Authorization": "x"}}}`, "options.emulate.headers.Proxy-Authorization"},
		{"bad header name", `{"emulate": {"headers": {"a b": "x"}}}`, "options.emulate.headers.a b"},
		{"cookie without domain", `{"emulate": {"cookies": [{"name": "a", "value": "b"}]}}`, "options.emulate.cookies[0]"},
		{"cookie same_site", `{"emulate": {"cookies": [{"name": "a", "value": "b", "domain": "x.test", "same_site": "lax"}]}}`, "options.emulate.cookies[0].same_site"},
		{"cookie none insecure", `{"emulate": {"cookies": [{"name": "a", "value": "b", "domain": "x.test", "same_site": "None"}]}}`, "options.emulate.cookies[0].same_site"},
		{"locale", `{"emulate": {"locale": "de_DE"}}`, "options.emulate.locale"},
		{"timezone", `{"emulate": {"timezone": "Mars/Olympus"}}`, "options.emulate.timezone"},
		{"color scheme", `{"emulate": {"color_scheme": "sepia"}}`, "options.emulate.color_scheme"},
		{"media", `{"emulate": {"media": "tv"}}`, "options.emulate.media"},
		{"device", `{"emulate": {"device": "nokia-3310"}}`, "options.emulate.device"},
		{"unknown emulate key", `{"emulate": {"geolocation": 1}}`, "options.emulate.geolocation"},
		{"empty hide selector", `{"prepare": {"hide_selectors": [""]}}`, "options.prepare.hide_selectors[0]"},
		{"css too long", `{"prepare": {"css": "` + long(64<<10+1) + `"}}`, "options.prepare.css"},
		{"script too long", `{"prepare": {"script": "` + long(64<<10+1) + `"}}`, "options.prepare.script"},
		{"network idle low", `{"wait": {"network_idle_ms": 99}}`, "options.wait.network_idle_ms"},
		{"network idle high", `{"wait": {"network_idle_ms": 10001}}`, "options.wait.network_idle_ms"},
		{"scroll step", `{"scroll": {"step_px": 0}}`, "options.scroll.step_px"},
		{"scroll max", `{"scroll": {"max_ms": 60001}}`, "options.scroll.max_ms"},
		{"screenshot selector", `{"screenshot": {"selector": "` + long(1025) + `"}}`, "options.screenshot.selector"},
		{"consent mode", `{"prepare": {"consent": "dismiss"}}`, "options.prepare.consent"},
		{"quality retry wait", `{"quality": {"retry_wait_ms": 99}}`, "options.quality.retry_wait_ms"},
		{"quality challenge wait", `{"quality": {"challenge_wait_ms": 60001}}`, "options.quality.challenge_wait_ms"},
		{"unknown quality key", `{"quality": {"strict": true}}`, "options.quality.strict"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := `{"urls": ["http://127.0.0.1:9999/"], "options": ` + tt.options + `}`
			_, _, err := ParseBatchRequest([]byte(body), 0)
			if diff := cmp.Diff([]string{tt.field}, fields(t, err)); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConsentAndQualityOptions(t *testing.T) {
	t.Parallel()
	body := `{"options": {"prepare": {"consent": "accept"}, "quality": {"retry": false, "retry_wait_ms": 800, "challenge_wait_ms": 1200}},
	  "targets": [{"url": "http://127.0.0.1:9999/a"}, {"url": "http://127.0.0.1:9999/b", "options": {"prepare": {"consent": "off"}, "quality": {"retry": true}}}]}`
	js, _, err := ParseBatchRequest([]byte(body), 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b := js[0].Options.CaptureRequest(js[0].URL, js[0].Name), js[1].Options.CaptureRequest(js[1].URL, js[1].Name)
	if a.Prepare.Consent != capture.ConsentAccept || b.Prepare.Consent != capture.ConsentOff {
		t.Errorf("consent %q, %q; want accept, off", a.Prepare.Consent, b.Prepare.Consent)
	}
	if diff := cmp.Diff(capture.QualityOptions{NoRetry: true, RetryWaitMS: 800, ChallengeWaitMS: 1200}, a.Quality); diff != "" {
		t.Errorf("quality (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(capture.QualityOptions{RetryWaitMS: 800, ChallengeWaitMS: 1200}, b.Quality); diff != "" {
		t.Errorf("target's quality (-want +got):\n%s", diff)
	}
	// A batch that says nothing: consent off, retry on.
	js, _, err = ParseBatchRequest([]byte(`{"urls": ["http://127.0.0.1:9999/"]}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	if r := js[0].Options.CaptureRequest(js[0].URL, js[0].Name); r.Prepare.Consent != "" || r.Quality.NoRetry {
		t.Errorf("defaults: consent %q, no_retry %v", r.Prepare.Consent, r.Quality.NoRetry)
	}
}
