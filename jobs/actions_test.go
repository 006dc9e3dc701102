package jobs

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/capture"
)

func TestActionsValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		actions string
		want    []string // fields with errors
	}{
		{"valid", `[{"type":"type","selector":"#q","text":"x","delay_ms":20},{"type":"press","key":"Enter"},
			{"type":"press","key":"a"},{"type":"click","selector":"#go","optional":true},{"type":"wait_for_navigation","timeout_ms":5000},
			{"type":"hover","selector":"a"},{"type":"select","selector":"s","value":""},{"type":"scroll","to":"bottom"},
			{"type":"scroll","by_px":-300},{"type":"wait","ms":100},{"type":"wait_for_selector","selector":"#r","state":"hidden"},
			{"type":"evaluate","expression":"1"},{"type":"screenshot","name":"results","mode":"segments","max_segments":3,"format":"jpeg"}]`, nil},
		{"missing type", `[{"selector":"#a"}]`, []string{"targets[0].options.actions[0].type"}},
		{"unknown type", `[{"type":"drag"}]`, []string{"targets[0].options.actions[0].type"}},
		{"missing selector", `[{"type":"click"}]`, []string{"targets[0].options.actions[0].selector"}},
		{"empty selector", `[{"type":"wait","ms":1},{"type":"click","selector":""}]`, []string{"targets[0].options.actions[1].selector"}},
		{"inapplicable and unknown fields", `[{"type":"click","selector":"a","text":"x","selecter":"b"}]`,
			[]string{"targets[0].options.actions[0].selecter", "targets[0].options.actions[0].text"}},
		{"bad key", `[{"type":"press","key":"F13"}]`, []string{"targets[0].options.actions[0].key"}},
		{"delay too long", `[{"type":"type","selector":"a","text":"x","delay_ms":1001}]`, []string{"targets[0].options.actions[0].delay_ms"}},
		{"wait too long", `[{"type":"wait","ms":30001}]`, []string{"targets[0].options.actions[0].ms"}},
		{"bad state", `[{"type":"wait_for_selector","selector":"a","state":"gone"}]`, []string{"targets[0].options.actions[0].state"}},
		{"scroll needs one", `[{"type":"scroll","to":"bottom","by_px":3}]`, []string{"targets[0].options.actions[0]"}},
		{"screenshot names", `[{"type":"screenshot","name":"a"},{"type":"screenshot","name":"a"},{"type":"screenshot","name":"001"}]`,
			[]string{"targets[0].options.actions[1].name", "targets[0].options.actions[2].name"}},
		{"missing expression", `[{"type":"evaluate"}]`, []string{"targets[0].options.actions[0].expression"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := `{"targets":[{"url":"http://127.0.0.1:9999/","options":{"actions":` + tt.actions + `}}]}`
			_, _, err := ParseBatchRequest([]byte(body), 0)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if diff := cmp.Diff(tt.want, fields(t, err)); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
		})
	}
}

func TestActionsLimitsAndRequest(t *testing.T) {
	t.Parallel()
	many := "["
	for i := range MaxActions + 1 {
		if i > 0 {
			many += ","
		}
		many += `{"type":"wait","ms":1}`
	}
	many += "]"
	_, _, err := ParseBatchRequest([]byte(`{"urls":["http://127.0.0.1:9999/"],"options":{"actions":`+many+`}}`), 0)
	if diff := cmp.Diff([]string{"options.actions"}, fields(t, err)); diff != "" {
		t.Errorf("51 actions (-want +got):\n%s", diff)
	}
	_, _, err = ParseBatchRequest([]byte(`{"urls":["http://127.0.0.1:9999/"],"options":{"timeout_ms":10000,"actions_timeout_ms":20000}}`), 0)
	if diff := cmp.Diff([]string{"options.actions_timeout_ms"}, fields(t, err)); diff != "" {
		t.Errorf("actions timeout over job timeout (-want +got):\n%s", diff)
	}

	// A target's list replaces the batch's as a whole.
	body := `{"options":{"timeout_ms":10000,"actions":[{"type":"wait","ms":5},{"type":"wait","ms":6}]},
		"targets":[{"url":"http://127.0.0.1:9999/a"},{"url":"http://127.0.0.1:9999/b","options":{"actions":[{"type":"screenshot","name":"s","optional":true}]}}]}`
	js, _, err := ParseBatchRequest([]byte(body), 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(js[0].Options.Actions); n != 2 {
		t.Errorf("target a has %d actions, want the batch's 2", n)
	}
	req := js[1].Options.CaptureRequest(js[1].URL, js[1].Name)
	want := []capture.Action{{Type: capture.ActionScreenshot, Name: "s", Optional: true,
		Screenshot: capture.Screenshot{Mode: capture.ModeViewport}}}
	if diff := cmp.Diff(want, req.Actions); diff != "" {
		t.Errorf("capture actions (-want +got):\n%s", diff)
	}
	if req.ActionsTimeout != 10*time.Second {
		t.Errorf("actions timeout %s, want the job's 10s (default 30s capped)", req.ActionsTimeout)
	}
}
