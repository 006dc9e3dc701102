package authprofile

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/jobs"
)

func TestRecipeSecretsAreFilledOnlyAtRunTime(t *testing.T) {
	t.Parallel()
	steps := []json.RawMessage{
		json.RawMessage(`{"type": "type", "selector": "#u", "text": "alice"}`),
		json.RawMessage(`{"type": "type", "selector": "#p", "secret": "password"}`),
		json.RawMessage(`{"type": "click", "selector": "#go"}`),
	}
	secrets := map[string]string{"password": "hunter2"}
	var errs jobs.FieldErrors
	checked := recipeActions(steps, secrets, nil, false, &errs)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if checked[1].Text == "hunter2" || !checked[1].Secret {
		t.Errorf("validation filled the secret: %+v", checked[1])
	}
	run := recipeActions(steps, secrets, []string{"http://127.0.0.1:8080"}, true, new(jobs.FieldErrors))
	if run[1].Text != "hunter2" || !run[1].Secret || run[0].Secret || len(run[1].Origins) != 1 {
		t.Errorf("run actions: %+v", run)
	}
}

func TestRecipeRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, step, field string
	}{
		{"unknown secret", `{"type": "type", "selector": "#p", "secret": "pin"}`, "steps[0].secret"},
		{"secret on click", `{"type": "click", "selector": "#p", "secret": "password"}`, "steps[0].secret"},
		{"text and secret", `{"type": "type", "selector": "#p", "text": "x", "secret": "password"}`, "steps[0].secret"},
		{"bad action", `{"type": "fly"}`, "steps[0].type"},
		{"evaluate", `{"type": "evaluate", "expression": "btoa(document.querySelector('#p').value)"}`, "steps[0].type"},
		{"screenshot", `{"type": "screenshot", "name": "pw"}`, "steps[0].type"},
	} {
		var errs jobs.FieldErrors
		recipeActions([]json.RawMessage{json.RawMessage(tc.step)}, map[string]string{"password": "x"}, nil, false, &errs)
		if len(errs) == 0 || errs[0].Field != tc.field {
			t.Errorf("%s: errors %+v, want one naming %s", tc.name, errs, tc.field)
		}
	}
}

func TestProfileInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, field string
	}{
		{"ok recipe", `{"name": "shop", "origins": ["http://127.0.0.1:8080/"], "login_url": "http://127.0.0.1:8080/login",
			"steps": [{"type": "type", "selector": "#p", "secret": "pw"}], "success": {"selector": "#me"}, "secrets": {"pw": "x"}}`, ""},
		{"login off the origins", `{"name": "shop", "origins": ["http://127.0.0.1:8080"], "login_url": "http://evil.example/login",
			"steps": [{"type": "click", "selector": "#go"}], "success": {"selector": "#me"}}`, "login_url"},
		{"no success", `{"name": "shop", "origins": ["http://127.0.0.1:8080"], "login_url": "http://127.0.0.1:8080/login",
			"steps": [{"type": "click", "selector": "#go"}]}`, "success"},
		{"origin with a path", `{"name": "shop", "origins": ["http://127.0.0.1:8080/app"]}`, "origins[0]"},
		{"neither recipe nor state", `{"name": "shop", "origins": ["http://127.0.0.1:8080"]}`, "login_url"},
		{"bad name", `{"name": "Shop!", "origins": ["http://127.0.0.1:8080"], "storage_state": {"cookies": [{"name": "a", "value": "b", "domain": "127.0.0.1"}]}}`, "name"},
		{"cookie of another site", `{"name": "s", "origins": ["https://app.example.com"], "storage_state": {"cookies": [{"name": "a", "value": "b", "domain": "example.org"}]}}`, "storage_state.cookies[0].domain"},
		{"cookie of a parent domain", `{"name": "s", "origins": ["https://app.example.com"], "storage_state": {"cookies": [{"name": "a", "value": "b", "domain": ".example.com"}]}}`, ""},
		{"storage of another origin", `{"name": "s", "origins": ["https://app.example.com"], "storage_state": {"cookies": [], "origins": [{"origin": "https://x.example.com", "localStorage": []}]}}`, "storage_state.origins[0].origin"},
	} {
		var in Input
		if err := json.Unmarshal([]byte(tc.body), &in); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		p := &Profile{}
		var errs jobs.FieldErrors
		in.apply(p, map[string]string{}, true, &errs)
		switch {
		case tc.field == "" && len(errs) > 0:
			t.Errorf("%s: refused: %+v", tc.name, errs)
		case tc.field != "" && (len(errs) == 0 || errs[0].Field != tc.field):
			t.Errorf("%s: errors %+v, want the first naming %s", tc.name, errs, tc.field)
		}
	}
}

func TestMask(t *testing.T) {
	t.Parallel()
	secrets := map[string]string{"pw": "hunter 2&x"}
	log := maskLog([]capture.LogEntry{{Type: "type", Target: "#p", Error: "typed hunter 2&x into #p",
		Excerpt: "went to http://127.0.0.1/login?u=a&pw=hunter+2%26x"}}, newMasker(secrets))
	if strings.Contains(log[0].Error, "hunter") || !strings.Contains(log[0].Error, capture.SecretMask) ||
		log[0].Excerpt != "went to http://127.0.0.1/login?…" {
		t.Errorf("masked log: %+v", log)
	}
	if got := Mask("ended on http://h/x?pw=aHVudGVyIDImeA", secrets); got != "ended on http://h/x?…" {
		t.Errorf("Mask = %q", got)
	}
	if got := Mask("base64 aHVudGVyIDImeA== of it", secrets); strings.Contains(got, "aHVudGVy") {
		t.Errorf("Mask = %q", got)
	}
}
