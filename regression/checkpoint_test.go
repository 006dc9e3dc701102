package regression

import (
	"testing"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/jobs"
)

func TestCheckpointOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file, want string
		ok               bool
	}{
		{name: "page", file: "shop-1280x720.png", want: FinalCheckpoint, ok: true},
		{name: "page segment", file: "shop-1280x720-002.png", want: FinalCheckpoint, ok: true},
		{name: "action", file: "shop-1280x720-list.png", want: "list", ok: true},
		{name: "action segment", file: "shop-1280x720-edit_form-003.png", want: "edit_form", ok: true},
		{name: "diff image", file: "shop-1280x720-list-diff-001.png", ok: false},
		{name: "another job", file: "other-1280x720-list.png", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := checkpointOf("shop-1280x720", tt.file)
			if got != tt.want || ok != tt.ok {
				t.Errorf("checkpointOf(%q) = %q, %v; want %q, %v", tt.file, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestCheckpointsAndFailedStep(t *testing.T) {
	t.Parallel()
	off := false
	sp := SuiteSpec{Targets: []SuiteTarget{{Name: "shop"}, {Name: "bare", FinalScreenshot: &off}}}
	job := &jobs.Job{Options: jobs.Options{Actions: []jobs.Action{
		{Type: capture.ActionScreenshot, Name: "login"},
		{Type: capture.ActionClick, Selector: "#detail-link"},
		{Type: capture.ActionScreenshot, Name: "detail"},
	}}}
	cps := sp.checkpoints("shop", job)
	if len(cps) != 3 || cps[0].name != "login" || cps[1].step != 2 || !cps[2].final() {
		t.Fatalf("checkpoints with the final screenshot: %+v", cps)
	}
	if cps := sp.checkpoints("bare", job); len(cps) != 2 || cps[1].name != "detail" {
		t.Fatalf("checkpoints without the final screenshot: %+v", cps)
	}
	job.Status, job.ErrorCode, job.ErrorMessage = jobs.StatusFailed, capture.CodeActionFailed, "action 1 (click) failed"
	job.Result = &jobs.Result{Log: []capture.LogEntry{{Index: 0, Type: "screenshot", OK: true},
		{Index: 1, Type: "click", Target: "#detail-link", Error: `no element matches "#detail-link"`}}}
	step, msg := failedStep(job)
	if step == nil || *step != 1 || msg != `step 1 (click #detail-link) failed: no element matches "#detail-link"` {
		t.Fatalf("failedStep = %v, %q", step, msg)
	}
	job.ErrorCode = "navigation_timeout"
	if step, msg := failedStep(job); step != nil || msg != "navigation_timeout: action 1 (click) failed" {
		t.Fatalf("failedStep of a navigation failure = %v, %q", step, msg)
	}
}

func TestJourneyForcesPNG(t *testing.T) {
	t.Parallel()
	actions := []jobs.Action{{Type: capture.ActionScreenshot, Name: "a", Format: "jpeg"}}
	o := jobs.Options{Actions: actions}
	SuiteSpec{}.stabilize(&o)
	if o.Actions[0].Format != capture.FormatPNG || !o.KeepCheckpoints || actions[0].Format != "jpeg" {
		t.Fatalf("journey options: %+v (spec's own %+v)", o.Actions, actions)
	}
}
