package regression

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/maintenance"
	"github.com/snapq/snapq/vcs"
)

// Validation of a suite document, section by section: every bad field is
// named, nothing is half-accepted.

// validate checks a suite document section by section and builds the
// suite; every problem is added to errs (the suite is nil when too many
// targets make the rest not worth checking).
func (in *SuiteInput) validate(minInterval time.Duration, errs *jobs.FieldErrors) *Suite {
	s := &Suite{Name: strings.TrimSpace(in.Name), Enabled: in.Enabled == nil || *in.Enabled}
	if n := utf8.RuneCountInString(s.Name); n == 0 || n > jobs.MaxNameLength {
		errs.Add("invalid_name", "name", fmt.Sprintf("give the suite a name of 1-%d characters", jobs.MaxNameLength))
	}
	switch {
	case len(in.Targets) == 0 && in.Discover == nil:
		errs.Add("required", "targets", "give at least one target, or discover them")
	case len(in.Targets) > MaxSuiteTargets:
		errs.Add(jobs.CodeTooManyTargets, "targets", fmt.Sprintf("a suite holds at most %d targets, got %d", MaxSuiteTargets, len(in.Targets)))
		return nil
	}
	s.Spec.Options = in.Options
	s.Spec.Targets = in.validateTargets(errs)
	in.validateSensitivity(&s.Spec, errs)
	s.Spec.Ignore = validateIgnore(in.Ignore, errs)
	s.Spec.Diff = validateDiff(in.Diff, errs)
	s.Spec.MainBranch = strings.TrimSpace(in.MainBranch)
	checkBranch(s.Spec.MainBranch, "main_branch", errs)
	if s.Spec.MainBranch == "" {
		s.Spec.MainBranch = DefaultMainBranch
	}
	s.Schedule = validateSchedule(in.Schedule, minInterval, errs)
	s.Spec.Retention = validateRetention(in.Retention, errs)
	s.Spec.BranchBaselineDays = validateBranchBaselineDays(in.BranchBaselineDays, errs)
	s.Spec.Discover = validateDiscover(in.Discover, in.Options, errs)
	s.Spec.Volatility = validateVolatility(in.Volatility, errs)
	in.validateOutbound(s, errs)
	return s
}

// validateTargets checks the suite's options and each target, and names the
// targets (from their URL when they have no name).
func (in *SuiteInput) validateTargets(errs *jobs.FieldErrors) []SuiteTarget {
	n := len(*errs)
	jobs.ResolveOptions(in.Options, "options", nil, "", errs)
	optionsOK := len(*errs) == n
	var out []SuiteTarget
	names := map[string]int{} // target name → index
	for i, t := range in.Targets {
		out = append(out, in.validateTarget(i, t, names, optionsOK, errs))
	}
	return out
}

// validateTarget checks targets[i]; its options are resolved with the
// suite's only when those are valid (optionsOK).
func (in *SuiteInput) validateTarget(i int, t SuiteTarget, names map[string]int, optionsOK bool, errs *jobs.FieldErrors) SuiteTarget {
	p := fmt.Sprintf("targets[%d]", i)
	u, code, err := jobs.CheckBrowserURL(t.URL)
	if err != nil {
		errs.Add(code, p+".url", err.Error())
	}
	name := jobs.SanitizeName(t.Name)
	if len(t.Name) > jobs.MaxNameLength {
		errs.Add("invalid_name", p+".name", fmt.Sprintf("must be at most %d characters", jobs.MaxNameLength))
	}
	if name == "" && err == nil {
		name = jobs.NameFromURL(u)
	}
	if j, dup := names[name]; dup && name != "" {
		errs.Add("duplicate_name", p+".name", fmt.Sprintf("targets[%d] already has the name %q; names key the baselines, give each target its own", j, name))
	}
	names[name] = i
	var o jobs.Options
	n := len(*errs)
	if optionsOK {
		o = jobs.ResolveOptions(in.Options, "options", t.Options, p+".options", errs)
	}
	targetOptionsOK := optionsOK && len(*errs) == n
	validateViewports(p, t.Viewports, errs)
	if t.FinalScreenshot != nil && !*t.FinalScreenshot && targetOptionsOK {
		if len(checkpointActions(o.Actions)) == 0 {
			errs.Add("invalid_option", p+".final_screenshot", "a target without its final screenshot needs at least one screenshot action (a checkpoint)")
		}
	}
	t.Triage.validate(p+".", errs)
	return SuiteTarget{URL: u, Name: name, Options: t.Options, Viewports: t.Viewports,
		FinalScreenshot: t.FinalScreenshot, Triage: t.Triage}
}

// validateViewports checks the viewports of target p.
func validateViewports(p string, vps []ViewportSize, errs *jobs.FieldErrors) {
	if len(vps) > MaxSuiteViewports {
		errs.Add("invalid_viewports", p+".viewports", fmt.Sprintf("at most %d viewports", MaxSuiteViewports))
	}
	for j, v := range vps {
		vp := fmt.Sprintf("%s.viewports[%d]", p, j)
		if v.Width < jobs.MinViewportSide || v.Width > jobs.MaxViewportSide {
			errs.Add("invalid_option", vp+".width", fmt.Sprintf("must be %d-%d", jobs.MinViewportSide, jobs.MaxViewportSide))
		}
		if v.Height < jobs.MinViewportSide || v.Height > jobs.MaxViewportSide {
			errs.Add("invalid_option", vp+".height", fmt.Sprintf("must be %d-%d", jobs.MinViewportSide, jobs.MaxViewportSide))
		}
	}
}

// validateSensitivity sets the spec's thresholds and triage bands. A preset
// sets the sensitivity together; explicit fields override it.
func (in *SuiteInput) validateSensitivity(spec *SuiteSpec, errs *jobs.FieldErrors) {
	sens := defaultSensitivity
	validatePreset(in.Preset, "preset", errs)
	if p, ok := Presets[in.Preset]; ok {
		sens, spec.Preset = p, in.Preset
	}
	spec.Threshold = ratioField(in.Threshold, sens.Threshold, "threshold", errs)
	spec.PixelThreshold = ratioField(in.PixelThreshold, sens.PixelThreshold, "pixel_threshold", errs)
	spec.IncludeAA = sens.IncludeAA
	if in.IncludeAA != nil {
		spec.IncludeAA = *in.IncludeAA
	}
	validateBands(in.AutoApproveBelow, in.FailAbove, "", errs)
	if in.AutoApproveBelow != nil {
		spec.AutoApproveBelow = *in.AutoApproveBelow
	}
	if in.FailAbove != nil {
		spec.FailAbove = *in.FailAbove
	}
}

// validateBranchBaselineDays checks branch_baseline_days (nil: the default).
func validateBranchBaselineDays(d *int, errs *jobs.FieldErrors) *int {
	if d == nil {
		return nil
	}
	if *d < 0 || *d > maintenance.MaxRetentionDays {
		errs.Add("invalid_option", "branch_baseline_days", fmt.Sprintf("must be 0 (never expire) to %d days", maintenance.MaxRetentionDays))
	}
	v := *d
	return &v
}

// validateOutbound checks where the suite reports its runs: its webhook, its
// code host and its notification channels.
func (in *SuiteInput) validateOutbound(s *Suite, errs *jobs.FieldErrors) {
	if in.Webhook != nil {
		jobs.ValidateWebhook(in.Webhook, errs)
		s.Webhook = &jobs.Webhook{URL: in.Webhook.URL, Secret: in.Webhook.Secret}
	}
	if in.VCS != nil {
		v := *in.VCS
		if err := v.Validate(); err != nil {
			errs.Add("invalid_option", "vcs", err.Error())
		}
		if err := vcs.CheckAPIURL(v.APIURL); err != nil {
			errs.Add("invalid_url", "vcs.api_url", err.Error())
		}
		s.VCS = &v
	}
	if in.Notify != nil {
		s.Notify = validateChannels(in.Notify, errs)
	}
}

func ratioField(v *float64, def float64, field string, errs *jobs.FieldErrors) float64 {
	if v == nil {
		return def
	}
	if math.IsNaN(*v) || *v < 0 || *v > 1 {
		errs.Add("invalid_option", field, "must be between 0 and 1")
		return def
	}
	return *v
}

func validateIgnore(in *IgnoreInput, errs *jobs.FieldErrors) Ignore {
	out := Ignore{Selectors: []string{}, Rects: []Rect{}}
	if in == nil {
		return out
	}
	if len(in.Selectors) > MaxIgnoreSelectors {
		errs.Add("invalid_option", "ignore.selectors", fmt.Sprintf("at most %d selectors", MaxIgnoreSelectors))
	}
	for i, sel := range in.Selectors {
		if strings.TrimSpace(sel) == "" || len(sel) > jobs.MaxSelectorLength {
			errs.Add("invalid_option", fmt.Sprintf("ignore.selectors[%d]", i), fmt.Sprintf("must be a CSS selector of 1-%d characters", jobs.MaxSelectorLength))
		}
	}
	if len(in.Rects) > MaxIgnoreRects {
		errs.Add("invalid_option", "ignore.rects", fmt.Sprintf("at most %d rectangles", MaxIgnoreRects))
	}
	for i, r := range in.Rects {
		if r.X < 0 || r.Y < 0 || r.Width <= 0 || r.Height <= 0 {
			errs.Add("invalid_option", fmt.Sprintf("ignore.rects[%d]", i), "x and y must be at least 0, width and height above 0 (CSS pixels, page coordinates)")
		}
	}
	out.Selectors = append(out.Selectors, in.Selectors...)
	out.Rects = append(out.Rects, in.Rects...)
	return out
}

func validateDiff(in *DiffSettings, errs *jobs.FieldErrors) DiffSettings {
	if in == nil {
		return DiffSettings{}
	}
	out := *in
	switch out.Mode {
	case "", DiffAligned, DiffPixel:
	default:
		errs.Add("invalid_option", "diff.mode", fmt.Sprintf("must be %q or %q", DiffAligned, DiffPixel))
	}
	switch out.ColorMetric {
	case "", MetricYIQ, MetricOKLab:
	default:
		errs.Add("invalid_option", "diff.color_metric", fmt.Sprintf("must be %q or %q", MetricYIQ, MetricOKLab))
	}
	return out
}
