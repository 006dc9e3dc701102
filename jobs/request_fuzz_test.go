package jobs

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// maxFuzzBody bounds the batch bodies the fuzzer tries: the api's body limit
// is far larger, but past a few KB the fuzzer only repeats what it has shown.
const maxFuzzBody = 16 << 10

// FuzzParseBatchRequest feeds arbitrary bodies to the batch parser. Either
// jobs come back, each with a canonical URL, a usable name and options that
// survive the store's JSON round trip, or a *ValidationError whose fields all
// carry a code and a message; never both, never neither.
func FuzzParseBatchRequest(f *testing.F) {
	for _, body := range []string{
		`{"urls": ["https://example.com/docs"]}`,
		`{"urls": ["https://example.com/docs"], "targets": [{"url": "http://127.0.0.1:9999/x", "name": "Home page"}]}`,
		`{"options": {"viewport": {"width": 800}, "screenshot": {"format": "jpeg", "quality": 70}, "timeout_ms": 20000},
		  "targets": [{"url": "https://a.example/"},
		    {"url": "https://b.example/", "options": {"viewport": {"height": 600, "device_scale_factor": 2},
		      "screenshot": {"mode": "full", "max_segments": 50}, "wait": {"until": "networkidle", "selector": "#app", "delay_ms": 250}}}]}`,
		`{"urls": ["https://a.example/"], "options": {"outputs": ["screenshot", "pdf", "markdown", "text"],
		  "pdf": {"paper": "letter", "landscape": true, "margin_mm": 5, "scale": 1.5, "page_ranges": "1-3,5", "prefer_css_page_size": true},
		  "markdown_max_chars": 5000, "block": {"resource_types": ["image", "font"], "url_patterns": ["*ads*"]}}}`,
		`{"urls": ["https://a.example/"], "options": {"emulate": {"user_agent": "snapq", "locale": "fr-FR", "timezone": "Europe/Paris",
		  "color_scheme": "dark", "headers": {"X-A": "1"}, "cookies": [{"name": "c", "value": "v", "domain": "a.example"}]},
		  "prepare": {"hide_selectors": [".ad"], "remove_selectors": ["#cookie"], "css": "body{}", "disable_animations": true, "script": "1"},
		  "scroll": {"enabled": true, "step": 500}}}`,
		`{"targets": [{"url": "http://127.0.0.1:9999/", "options": {"actions_timeout_ms": 10000, "actions": [
		  {"type": "click", "selector": "#a", "timeout_ms": 500},
		  {"type": "type", "selector": "input", "text": "hello", "delay_ms": 10},
		  {"type": "press", "key": "Enter"}, {"type": "hover", "selector": "a", "optional": true},
		  {"type": "select", "selector": "select", "value": "x"}, {"type": "scroll", "to": "bottom"},
		  {"type": "scroll", "by_px": 300}, {"type": "wait", "ms": 100},
		  {"type": "wait_for_selector", "selector": ".done", "state": "visible"}, {"type": "wait_for_navigation"},
		  {"type": "evaluate", "expression": "document.title"},
		  {"type": "screenshot", "name": "after_login", "mode": "viewport", "format": "png"}]}}]}`,
		`{"urls": ["https://a.example/"], "labels": {"team": "web"}, "webhook": {"url": "https://hooks.example/x", "secret": "0123456789abcdef0123"}}`,
		`{"targets": [{"url": "https://ok.example/"}, {"url": "file:///etc/passwd"}, {"url": ""}], "urls": ["nope"]}`,
		`{"target": [], "urls": ["https://a.example/"], "options": {"viewport": {"widht": 5}}, "labels": {}}`,
		`{"targets": [{"url": "https://a.example/", "options": {"actions": [{"type": "scroll", "to": "bottom", "by_px": 3}, {"selecter": 1}]}}]}`,
		`{"urls": ["https://a.example/"], "options": {"screenshot": {"max_segments": 2.5}, "timeout_ms": 1e400}}`,
		`{"urls": [{"a": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}]}`,
		`{"targets": [`, `[]`, `{}`, `null`, `{"urls": null, "targets": [null]}`, `{"a":1} {"b":2}`,
	} {
		f.Add([]byte(body), int16(0))
	}
	f.Add([]byte(`{"urls": ["https://a.example/", "https://b.example/", "https://c.example/"]}`), int16(2))

	f.Fuzz(func(t *testing.T, body []byte, maxTargets int16) {
		if len(body) > maxFuzzBody {
			t.Skip()
		}
		limit := int(maxTargets)
		js, req, err := ParseBatchRequest(body, limit)
		if err != nil {
			if js != nil || req != nil {
				t.Fatalf("error %v came with %d jobs and a request", err, len(js))
			}
			checkValidationError(t, err)
			return
		}
		if req == nil {
			t.Fatal("no error and no request")
		}
		if limit <= 0 {
			limit = MaxTargets
		}
		if n := len(req.Targets) + len(req.URLs); len(js) != n || n == 0 || n > limit {
			t.Fatalf("%d jobs from %d targets (limit %d)", len(js), n, limit)
		}
		for i, j := range js {
			if again, err := NormalizeURL(j.URL); err != nil || again != j.URL {
				t.Errorf("job %d: URL %q re-normalizes to %q, %v", i, j.URL, again, err)
			}
			if j.Name == "" || SanitizeName(j.Name) != j.Name {
				t.Errorf("job %d: name %q is not a sanitized, non-empty name", i, j.Name)
			}
			// The store keeps options as JSON; what it reads back must be what was validated.
			stored, err := json.Marshal(j.Options)
			if err != nil {
				t.Fatalf("job %d: options do not marshal: %v", i, err)
			}
			var back Options
			if err := json.Unmarshal(stored, &back); err != nil {
				t.Fatalf("job %d: stored options %s do not unmarshal: %v", i, stored, err)
			}
			if diff := cmp.Diff(j.Options, back, cmpopts.EquateEmpty(), cmp.AllowUnexported(Action{})); diff != "" {
				t.Errorf("job %d: options after the store's JSON round trip (-want +got):\n%s", i, diff)
			}
		}
		// The store keeps the batch's shared options once and each job's override: the
		// options resolved from them must be the job's, byte for byte as JSON.
		shared := req.SharedOptions()
		sharedJSON, err := json.Marshal(shared)
		if err != nil {
			t.Fatal(err)
		}
		resolver := NewSharedOptions(sharedJSON)
		for i, j := range js {
			override, err := OptionsOverride(&shared, sharedJSON, &j.Options)
			if err != nil {
				t.Fatalf("job %d: override: %v", i, err)
			}
			got, err := resolver.Resolve(override)
			if err != nil {
				t.Fatalf("job %d: resolve %s: %v", i, override, err)
			}
			want, _ := json.Marshal(j.Options)
			if gotJSON, _ := json.Marshal(got); string(gotJSON) != string(want) {
				t.Errorf("job %d: options from the shared ones and override %s:\n got %s\nwant %s", i, override, gotJSON, want)
			}
		}
	})
}

// checkValidationError asserts err is a *ValidationError naming 1-100
// problems, each with a code and a message.
func checkValidationError(t *testing.T, err error) {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v (%T), want a *ValidationError", err, err)
	}
	if len(ve.Fields) == 0 || len(ve.Fields) > maxFieldErrors {
		t.Fatalf("%d field errors, want 1-%d", len(ve.Fields), maxFieldErrors)
	}
	for _, fe := range ve.Fields {
		if fe.Code == "" || fe.Message == "" || strings.TrimSpace(fe.Code) != fe.Code {
			t.Errorf("field error %+v lacks a code or a message", fe)
		}
		// Only a whole-body error, or the unknown key "" at the top level, has no field path.
		if fe.Field == "" && fe.Code != "invalid_json" && fe.Message != `unknown field ""` {
			t.Errorf("field error %+v names no field", fe)
		}
	}
}

// FuzzNormalizeURL checks that a URL NormalizeURL accepts is canonical: it
// normalizes to itself, is http(s) with a lowercase scheme and host, carries
// no fragment or user information, and fits the length limit it enforces.
func FuzzNormalizeURL(f *testing.F) {
	for _, s := range []string{
		"https://example.com/a?b=1", "http://127.0.0.1:8080/", "HTTPS://Example.COM/Path#frag",
		"", "/docs", "example.com", "file:///etc/passwd", "javascript:alert(1)", "data:text/html,hi",
		"https://user:pw@example.com/", "http:///path", "http://example.com:0/", "http://example.com:70000/",
		" https://example.com/", "https://example.com/%zz", "http://[::1]:80/x", "http://[fe80::1%25en0]/",
		"https://exa mple.com/", "https://example.com/a b?c d#e f", "http://example.com:+80/", "http://ÉXAMPLE.com/Ä",
		"https://example.com/" + strings.Repeat("a", 2100), "http:example.com", "https://example.com:/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := NormalizeURL(raw)
		if err != nil {
			if got != "" || err.Error() == "" {
				t.Fatalf("NormalizeURL(%q) = %q with error %v", raw, got, err)
			}
			return
		}
		again, err := NormalizeURL(got)
		if err != nil || again != got {
			t.Fatalf("NormalizeURL(%q) = %q, which re-normalizes to %q, %v", raw, got, again, err)
		}
		if !strings.HasPrefix(got, "http://") && !strings.HasPrefix(got, "https://") {
			t.Errorf("NormalizeURL(%q) = %q: not http(s)", raw, got)
		}
		if strings.Contains(got, "#") {
			t.Errorf("NormalizeURL(%q) = %q keeps a fragment", raw, got)
		}
		if utf8.ValidString(raw) && !utf8.ValidString(got) {
			t.Errorf("NormalizeURL(%q) = %q is not valid UTF-8", raw, got)
		}
		if name := NameFromURL(got); name == "" || SanitizeName(name) != name {
			t.Errorf("NameFromURL(%q) = %q", got, name)
		}
	})
}
