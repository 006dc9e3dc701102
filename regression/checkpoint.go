package regression

import (
	"fmt"
	"strings"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/jobs"
)

// Journeys: in a suite target, each `screenshot` action is a checkpoint,
// compared with its own baselines (target, checkpoint, viewport, segment)
// and approved on its own. The page's final screenshot is the checkpoint ""
// (every baseline written before checkpoints existed), the target's last
// unless it says final_screenshot: false. When an action fails, the
// checkpoints it reached are still compared (the job keeps their images:
// jobs.Options.KeepCheckpoints) and the others are errors naming the step.

// FinalCheckpoint is the checkpoint name of the page's final screenshot.
const FinalCheckpoint = ""

// checkpoint is one screenshot a capture job of a journey is compared by.
type checkpoint struct {
	name string
	step int // the screenshot action's index in the actions; -1 for the final screenshot
	mode string
}

// final reports whether cp is the page's final screenshot.
func (cp checkpoint) final() bool { return cp.step < 0 }

// stepRef is the comparison's Step: nil for the final screenshot.
func (cp checkpoint) stepRef() *int {
	if cp.final() {
		return nil
	}
	n := cp.step
	return &n
}

// checkpointActions returns the indexes of the screenshot actions.
func checkpointActions(actions []jobs.Action) []int {
	var out []int
	for i, a := range actions {
		if a.Type == capture.ActionScreenshot {
			out = append(out, i)
		}
	}
	return out
}

// journey readies a suite capture's screenshot actions to be checkpoints:
// PNG (diffs need lossless images), and kept when a later step fails.
func journey(o *jobs.Options) {
	idx := checkpointActions(o.Actions)
	if len(idx) == 0 {
		return
	}
	o.Actions = append([]jobs.Action(nil), o.Actions...) // never the spec's own slice
	for _, i := range idx {
		o.Actions[i].Format = capture.FormatPNG
	}
	o.KeepCheckpoints = true
}

// target returns the spec's target named name, or nil.
func (sp SuiteSpec) target(name string) *SuiteTarget {
	for i := range sp.Targets {
		if sp.Targets[i].Name == name {
			return &sp.Targets[i]
		}
	}
	return nil
}

// checkpoints lists a capture job's checkpoints in order: its screenshot
// actions, then the final screenshot unless the target leaves it out.
func (sp SuiteSpec) checkpoints(target string, job *jobs.Job) []checkpoint {
	var out []checkpoint
	for _, i := range checkpointActions(job.Options.Actions) {
		a := job.Options.Actions[i]
		out = append(out, checkpoint{name: a.Name, step: i, mode: a.Mode})
	}
	if t := sp.target(target); t == nil || t.FinalScreenshot == nil || *t.FinalScreenshot || len(out) == 0 {
		out = append(out, checkpoint{name: FinalCheckpoint, step: -1, mode: job.Options.Screenshot.Mode})
	}
	return out
}

// checkpointOf names the checkpoint an image of job jobName shows: the page's
// (name.png, name-001.png) is FinalCheckpoint; a screenshot action's
// (name-<action>.png, name-<action>-001.png) is the action's name. ok is
// false for any other file.
func checkpointOf(jobName, file string) (string, bool) {
	if isSegment(jobName, file) {
		return FinalCheckpoint, true
	}
	rest, ok := strings.CutPrefix(strings.TrimSuffix(file, ".png"), jobName+"-")
	if !ok || rest == "" {
		return "", false
	}
	if n := len(rest); n > 4 && rest[n-4] == '-' && strings.Trim(rest[n-3:], "0123456789") == "" {
		rest = rest[:n-4]
	}
	if strings.Trim(rest, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
		return "", false
	}
	return rest, true
}

// failedStep reads, from a failed job, the index of the action whose
// failure ended it (nil when an action did not end it) and what to tell
// about the failure.
func failedStep(job *jobs.Job) (*int, string) {
	msg := "the capture did not succeed"
	if job.ErrorCode != "" {
		msg = job.ErrorCode + ": " + job.ErrorMessage
	}
	if job.ErrorCode != capture.CodeActionFailed || job.Result == nil {
		return nil, msg
	}
	for i := len(job.Result.Log) - 1; i >= 0; i-- {
		e := job.Result.Log[i]
		if e.OK || e.Index < 0 || e.Index >= len(job.Options.Actions) || job.Options.Actions[e.Index].Type != e.Type {
			continue
		}
		n := e.Index
		what := e.Type
		if e.Target != "" {
			what += " " + e.Target
		}
		return &n, fmt.Sprintf("step %d (%s) failed: %s", n, what, e.Error)
	}
	return nil, msg
}
