package browserless

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/jobs"
)

// options marshals the mapped target's options as snapq's wire JSON.
func options(t *testing.T, r *Request) map[string]any {
	t.Helper()
	raw, err := json.Marshal(r.Target.Options)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestParseMapsFields(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, route, body     string
		want                  map[string]any
		output, format, token string
	}{
		{name: "deerflow content", route: RouteContent, output: "html", token: "k",
			body: `{"url":"http://a/","token":"k","waitForEvent":"networkidle","waitForTimeout":500,
				"waitForSelector":{"selector":"#x","timeout":5000},"rejectResourceTypes":["image"],"rejectRequestPattern":[".*\\.png"]}`,
			want: map[string]any{"block": map[string]any{"resource_types": []any{"image"}, "url_patterns": []any{"*.png*"}},
				"wait": map[string]any{"until": "networkidle", "delay_ms": 500.0, "selector": "#x", "selector_timeout_ms": 5000.0}}},
		{name: "v2 screenshot", route: RouteScreenshot, output: "screenshot", format: "jpeg",
			body: `{"url":"http://a/","gotoOptions":{"waitUntil":["load","networkidle2"],"timeout":9000},
				"options":{"fullPage":true,"type":"jpeg","quality":70},"viewport":{"width":800,"height":600,"deviceScaleFactor":2,"isMobile":true},
				"userAgent":{"userAgent":"UA"},"setExtraHTTPHeaders":{"X-A":"1"},"emulateMediaType":"print","bestAttempt":true,
				"cookies":[{"name":"c","value":"v","domain":"a","sameSite":"Default","httpOnly":true}]}`,
			want: map[string]any{"block": map[string]any{"resource_types": []any{}}, "timeout_ms": 9000.0,
				"screenshot": map[string]any{"mode": "full", "quality": 70.0},
				"viewport":   map[string]any{"width": 800.0, "height": 600.0, "device_scale_factor": 2.0},
				"wait":       map[string]any{"until": "networkidle", "best_attempt": true},
				"emulate": map[string]any{"user_agent": "UA", "headers": map[string]any{"X-A": "1"}, "media": "print", "mobile": true,
					"cookies": []any{map[string]any{"name": "c", "value": "v", "domain": "a", "http_only": true}}}}},
		{name: "v1 spellings", route: RouteScreenshot, output: "screenshot", format: "png",
			body: `{"url":"http://a/","waitUntil":"domcontentloaded","gotoTimeout":3000,"userAgent":"UA1"}`,
			want: map[string]any{"block": map[string]any{"resource_types": []any{}}, "timeout_ms": 3000.0,
				"screenshot": map[string]any{"mode": "viewport"}, "wait": map[string]any{"until": "domcontentloaded"},
				"emulate": map[string]any{"user_agent": "UA1"}}},
		{name: "pdf", route: RoutePDF, output: "pdf",
			body: `{"url":"http://a/","options":{"format":"Letter","landscape":true,"printBackground":false,"margin":{"top":"10mm","right":"1cm","bottom":"10mm","left":"10mm"}}}`,
			want: map[string]any{"block": map[string]any{"resource_types": []any{}},
				"pdf": map[string]any{"paper": "letter", "landscape": true, "print_background": false, "margin_mm": 10.0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := Parse(tc.route, []byte(tc.body))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tc.want, options(t, r)); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
			if r.Output != tc.output || r.Format != tc.format || r.Token != tc.token || r.Target.URL != "http://a/" {
				t.Errorf("output %q format %q token %q url %q", r.Output, r.Format, r.Token, r.Target.URL)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, route, body, code, field string }{
		{"html", RouteContent, `{"html":"<p>x</p>"}`, "refused_field", "html"},
		{"addScriptTag", RouteContent, `{"url":"http://a/","addScriptTag":[{"content":"x"}]}`, "refused_field", "addScriptTag"},
		{"unknown", RouteContent, `{"url":"http://a/","bogus":1}`, "unknown_field", "bogus"},
		{"options on content", RouteContent, `{"url":"http://a/","options":{}}`, "unknown_field", "options"},
		{"clip", RouteScreenshot, `{"url":"http://a/","options":{"clip":{"x":0,"y":0,"width":1,"height":1}}}`, "refused_field", "options.clip"},
		{"omitBackground", RouteScreenshot, `{"url":"http://a/","options":{"omitBackground":true}}`, "unsupported_value", "options.omitBackground"},
		{"script type", RouteContent, `{"url":"http://a/","rejectResourceTypes":["image","script"]}`, "unsupported_value", "rejectResourceTypes[1]"},
		{"regex", RouteContent, `{"url":"http://a/","rejectRequestPattern":["^https?://"]}`, "unsupported_value", "rejectRequestPattern[0]"},
		{"custom event", RouteContent, `{"url":"http://a/","waitForEvent":{"event":"my-ready"}}`, "unsupported_value", "waitForEvent.event"},
		{"js off", RouteContent, `{"url":"http://a/","setJavaScriptEnabled":false}`, "refused_field", "setJavaScriptEnabled"},
		{"no url", RouteContent, `{}`, "required", "url"},
		{"bad selector object", RouteContent, `{"url":"http://a/","waitForSelector":{"selector":"a","polling":1}}`, "unknown_field", "waitForSelector.polling"},
		{"header template", RoutePDF, `{"url":"http://a/","options":{"displayHeaderFooter":true}}`, "refused_field", "options.displayHeaderFooter"},
		{"not an object", RouteContent, `[1]`, "invalid_json", ""},
		{"selector missing", RouteContent, `{"url":"http://a/","waitForSelector":{"timeout":5}}`, "required", "waitForSelector.selector"},
		{"event missing", RouteContent, `{"url":"http://a/","waitForEvent":{"timeout":5}}`, "required", "waitForEvent.event"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tc.route, []byte(tc.body))
			var ve *jobs.ValidationError
			if !errors.As(err, &ve) || len(ve.Fields) == 0 {
				t.Fatalf("Parse: %v, want a validation error", err)
			}
			if got := ve.Fields[0]; got.Code != tc.code || got.Field != tc.field {
				t.Errorf("error %+v, want %s on %q", got, tc.code, tc.field)
			}
		})
	}
}

func TestRenameNamesBrowserlessFields(t *testing.T) {
	t.Parallel()
	r, err := Parse(RouteScreenshot, []byte(`{"url":"http://a/","viewport":{"width":1,"height":600},"waitForSelector":{"selector":"a","timeout":-1}}`))
	if err != nil {
		t.Fatal(err)
	}
	in := &jobs.ValidationError{Fields: []jobs.FieldError{{Field: "options.viewport.width"}, {Field: "options.wait.selector_timeout_ms"}, {Field: "url"}, {Field: "options.x"}}}
	var got []string
	for _, f := range r.Rename(in).(*jobs.ValidationError).Fields {
		got = append(got, f.Field)
	}
	if diff := cmp.Diff([]string{"viewport.width", "waitForSelector.timeout", "url", "options.x"}, got); diff != "" {
		t.Errorf("renamed fields (-want +got):\n%s", diff)
	}
}

func TestRegexToGlob(t *testing.T) {
	t.Parallel()
	for re, want := range map[string]string{`.*\.png`: "*.png*", `/ads/`: "*/ads/*", `tracker\.js`: "*tracker.js*", `a|b`: "", `x+`: "", `.`: ""} {
		got, ok := regexToGlob(re)
		if (want == "") == ok || got != want {
			t.Errorf("regexToGlob(%q) = %q, %v; want %q", re, got, ok, want)
		}
	}
}

// FuzzParse: any body maps or is refused with a validation error; nothing panics.
func FuzzParse(f *testing.F) {
	f.Add(`{"url":"http://a/","options":{"fullPage":true,"type":"webp"},"viewport":{"width":800,"height":600}}`)
	f.Add(`{"url":"http://a/","rejectRequestPattern":[".*\\.png","a|b"],"cookies":[{"name":"a","value":"b"}]}`)
	f.Add(`{"waitForEvent":{"event":"load"},"gotoOptions":{"waitUntil":["load","networkidle0"]}}`)
	f.Fuzz(func(t *testing.T, body string) {
		for _, route := range Routes() {
			r, err := Parse(route, []byte(body))
			var ve *jobs.ValidationError
			if err != nil && !errors.As(err, &ve) {
				t.Fatalf("Parse(%q): %v is not a validation error", body, err)
			}
			if err == nil && (r.Target.Options == nil || r.Output == "") {
				t.Fatalf("Parse(%q): no options or output", body)
			}
		}
	})
}
