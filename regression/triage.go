package regression

import (
	"fmt"
	"math"

	"github.com/snapq/snapq/jobs"
)

// Triage (issue 16, review at scale): sensitivity presets set how strictly
// pixels are compared, and bands decide what needs no human: a change
// below auto_approve_below passes (and says so), one above fail_above
// fails whatever the threshold allows. Suites set them; a target may
// override each.

// Sensitivity presets. They are part of the public API (web/openapi.json
// lists their values).
const (
	PresetStrict      = "strict"
	PresetRecommended = "recommended"
	PresetRelaxed     = "relaxed"
)

// Sensitivity is what a preset sets together.
type Sensitivity struct {
	// Threshold is the ratio of differing pixels a comparison may have and pass.
	Threshold float64
	// PixelThreshold is the per-pixel colour distance (0: exact).
	PixelThreshold float64
	// IncludeAA counts anti-aliased pixels as differences (false: they are
	// detected and excused).
	IncludeAA bool
}

// Presets are the sensitivity presets' values.
var Presets = map[string]Sensitivity{
	PresetStrict:      {Threshold: 0, PixelThreshold: 0, IncludeAA: true},
	PresetRecommended: {Threshold: 0.001, PixelThreshold: 0.1, IncludeAA: false},
	PresetRelaxed:     {Threshold: 0.01, PixelThreshold: 0.2, IncludeAA: false},
}

// defaultSensitivity is a suite's without a preset (what suites had before presets).
var defaultSensitivity = Sensitivity{Threshold: 0, PixelThreshold: DefaultPixelThreshold}

// Triage is a target's overrides of the suite's sensitivity and bands
// (SuiteTarget's fields); nil fields keep the suite's.
type Triage struct {
	Preset           string   `json:"preset,omitempty"`
	Threshold        *float64 `json:"threshold,omitempty"`
	PixelThreshold   *float64 `json:"pixel_threshold,omitempty"`
	IncludeAA        *bool    `json:"include_aa,omitempty"`
	AutoApproveBelow *float64 `json:"auto_approve_below,omitempty"`
	FailAbove        *float64 `json:"fail_above,omitempty"`
}

// Settings are how one target's captures are compared.
type Settings struct {
	Sensitivity
	// AutoApproveBelow: a comparison with 0 < ratio < it passes, auto-approved
	// (0: no band).
	AutoApproveBelow float64
	// FailAbove: a comparison with a ratio above it fails (0: no band).
	FailAbove float64
}

// SettingsFor is how the target named name is compared: the suite's
// settings, then the target's preset, then its explicit fields.
func (sp SuiteSpec) SettingsFor(name string) Settings {
	s := Settings{Sensitivity: Sensitivity{Threshold: sp.Threshold, PixelThreshold: sp.PixelThreshold, IncludeAA: sp.IncludeAA},
		AutoApproveBelow: sp.AutoApproveBelow, FailAbove: sp.FailAbove}
	for _, t := range sp.Targets {
		if t.Name == name {
			t.Triage.apply(&s)
			break
		}
	}
	return s
}

func (t Triage) apply(s *Settings) {
	if p, ok := Presets[t.Preset]; ok {
		s.Sensitivity = p
	}
	if t.Threshold != nil {
		s.Threshold = *t.Threshold
	}
	if t.PixelThreshold != nil {
		s.PixelThreshold = *t.PixelThreshold
	}
	if t.IncludeAA != nil {
		s.IncludeAA = *t.IncludeAA
	}
	if t.AutoApproveBelow != nil {
		s.AutoApproveBelow = *t.AutoApproveBelow
	}
	if t.FailAbove != nil {
		s.FailAbove = *t.FailAbove
	}
}

// forTarget is the run with its spec's suite-level settings replaced by
// the target's: what the comparer reads (Spec.Threshold, diffOptions).
func (r *Run) forTarget(name string) *Run {
	s := r.Spec.SettingsFor(name)
	out := *r
	out.Spec.Threshold, out.Spec.PixelThreshold, out.Spec.IncludeAA = s.Threshold, s.PixelThreshold, s.IncludeAA
	out.Spec.AutoApproveBelow, out.Spec.FailAbove = s.AutoApproveBelow, s.FailAbove
	return &out
}

// applyBands applies the triage bands to a compared segment: a failed one
// with 0 < ratio < AutoApproveBelow passes, auto-approved (never a size
// change), a passed one above FailAbove fails.
func (s Settings) applyBands(c *Comparison) {
	switch {
	case c.Status == CompareFailed && !c.sizeChanged && s.AutoApproveBelow > 0 && c.DiffRatio > 0 && c.DiffRatio < s.AutoApproveBelow:
		c.Status, c.AutoApproved = ComparePassed, true
		c.Message = fmt.Sprintf("auto-approved: %d pixels differ (%.4f%% < auto_approve_below %.4f%%)",
			c.DiffPixels, c.DiffRatio*100, s.AutoApproveBelow*100)
	case c.Status == ComparePassed && s.FailAbove > 0 && c.DiffRatio > s.FailAbove:
		c.Status = CompareFailed
		c.Message = fmt.Sprintf("%d pixels differ (%.4f%% > fail_above %.4f%%)", c.DiffPixels, c.DiffRatio*100, s.FailAbove*100)
	}
}

// validatePreset adds an error for an unknown preset name.
func validatePreset(p, field string, errs *jobs.FieldErrors) {
	if _, ok := Presets[p]; p != "" && !ok {
		errs.Add("invalid_option", field, fmt.Sprintf("must be %q, %q or %q", PresetStrict, PresetRecommended, PresetRelaxed))
	}
}

// validateBands checks a pair of bands (nil: not given): each in (0, 1],
// auto_approve_below not above fail_above.
func validateBands(auto, fail *float64, prefix string, errs *jobs.FieldErrors) {
	ok := true
	for _, b := range []struct {
		v    *float64
		name string
	}{{auto, "auto_approve_below"}, {fail, "fail_above"}} {
		if b.v != nil && (math.IsNaN(*b.v) || *b.v <= 0 || *b.v > 1) {
			errs.Add("invalid_option", prefix+b.name, "must be above 0 and at most 1 (a ratio of the segment's pixels)")
			ok = false
		}
	}
	if ok && auto != nil && fail != nil && *auto > *fail {
		errs.Add("invalid_option", prefix+"auto_approve_below", fmt.Sprintf("must not be above fail_above (%v)", *fail))
	}
}

// validate checks a target's triage fields, named under prefix ("targets[2].").
func (t Triage) validate(prefix string, errs *jobs.FieldErrors) {
	validatePreset(t.Preset, prefix+"preset", errs)
	if t.Threshold != nil {
		ratioField(t.Threshold, 0, prefix+"threshold", errs)
	}
	if t.PixelThreshold != nil {
		ratioField(t.PixelThreshold, 0, prefix+"pixel_threshold", errs)
	}
	validateBands(t.AutoApproveBelow, t.FailAbove, prefix, errs)
}
