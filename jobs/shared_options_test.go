package jobs_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/snapq/snapq/jobs"
)

// bigHeaders are batch options of about 200 KB within the limits: 50 headers of 4 KB.
func bigHeaders() map[string]string {
	h := map[string]string{}
	for i := range jobs.MaxEmulateHeaders {
		h[fmt.Sprintf("X-Big-%02d", i)] = strings.Repeat(string(rune('a'+i%26)), jobs.MaxHeaderValueLength)
	}
	return h
}

// Each job's options come back exactly from the batch's shared options and the job's
// override; a target without options has no override, and a target's override holds its
// own options only, never a copy of the batch's.
func TestSharedOptionsOverride(t *testing.T) {
	t.Parallel()
	batch := map[string]any{
		"viewport": map[string]any{"width": 800},
		"wait":     map[string]any{"selector": "#app"},
		"emulate":  map[string]any{"headers": bigHeaders(), "user_agent": "snapq-batch"},
		"prepare":  map[string]any{"script": strings.Repeat("1;", 20_000)},
		"outputs":  []string{"html"},
	}
	tests := []struct {
		name    string
		options map[string]any // the target's; nil: none
		maxLen  int            // of the override; 0: none
	}{
		{name: "no options"},
		{name: "viewport height", options: map[string]any{"viewport": map[string]any{"height": 600}}, maxLen: 100},
		{name: "fewer headers", options: map[string]any{"emulate": map[string]any{"headers": map[string]string{"X-Own": "1"}}}, maxLen: 4000},
		{name: "screenshot output unblocks images", options: map[string]any{"outputs": []string{"screenshot"}}, maxLen: 200},
		{name: "empty selector", options: map[string]any{"wait": map[string]any{"selector": ""}}, maxLen: 100},
		{name: "device", options: map[string]any{"emulate": map[string]any{"device": "iphone-15"}}, maxLen: 400},
		{name: "actions", options: map[string]any{"actions": []map[string]any{{"type": "click", "selector": "#a"}}}, maxLen: 200},
	}
	var targets []map[string]any
	for i, tt := range tests {
		target := map[string]any{"url": fmt.Sprintf("https://example.com/%d", i)}
		if tt.options != nil {
			target["options"] = tt.options
		}
		targets = append(targets, target)
	}
	body, err := json.Marshal(map[string]any{"options": batch, "targets": targets})
	if err != nil {
		t.Fatal(err)
	}
	js, req, err := jobs.ParseBatchRequest(body, 0)
	if err != nil {
		t.Fatal(err)
	}
	shared := req.SharedOptions()
	sharedJSON, err := json.Marshal(shared)
	if err != nil {
		t.Fatal(err)
	}
	if len(sharedJSON) < 200_000 {
		t.Fatalf("shared options are %d bytes, want the batch's 200 KB", len(sharedJSON))
	}
	resolver := jobs.NewSharedOptions(sharedJSON)
	for i, tt := range tests {
		override, err := jobs.OptionsOverride(&shared, sharedJSON, &js[i].Options)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		switch {
		case tt.maxLen == 0 && override != nil:
			t.Errorf("%s: override %s, want none", tt.name, override)
		case tt.maxLen > 0 && (override == nil || len(override) > tt.maxLen):
			t.Errorf("%s: override of %d bytes, want 1 to %d: %.200s", tt.name, len(override), tt.maxLen, override)
		}
		got, err := resolver.Resolve(override)
		if err != nil {
			t.Fatalf("%s: resolve: %v", tt.name, err)
		}
		gotJSON, _ := json.Marshal(got)
		wantJSON, _ := json.Marshal(js[i].Options)
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("%s: resolved options differ from the job's:\n got %.400s\nwant %.400s", tt.name, gotJSON, wantJSON)
		}
	}
	// The merge semantics are ParseBatchRequest's: the override wins, the batch's options apply.
	if o := js[1].Options; o.Viewport.Width != 800 || o.Viewport.Height != 600 || len(o.Emulate.Headers) != jobs.MaxEmulateHeaders {
		t.Errorf("viewport height target: viewport %+v, %d headers", o.Viewport, len(o.Emulate.Headers))
	}
	if h := js[2].Options.Emulate.Headers; len(h) != 1 || h["X-Own"] != "1" {
		t.Errorf("fewer headers target: headers %v, want only X-Own", h)
	}
}
