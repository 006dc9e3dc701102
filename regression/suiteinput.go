package regression

import (
	"time"

	"github.com/snapq/snapq/jobs"
)

// The wire form of a suite: what POST and PATCH /v1/suites decode, and the
// document a PATCH merges into.

// SuiteInput is the wire form of a suite (POST, and the merged document of a PATCH).
type SuiteInput struct {
	Name           string             `json:"name"`
	Targets        []SuiteTarget      `json:"targets"` // as given; validate fills in names
	Options        *jobs.OptionsInput `json:"options,omitempty"`
	Schedule       *ScheduleInput     `json:"schedule,omitempty"`
	Threshold      *float64           `json:"threshold,omitempty"`
	PixelThreshold *float64           `json:"pixel_threshold,omitempty"`
	Ignore         *IgnoreInput       `json:"ignore,omitempty"`
	Diff           *DiffSettings      `json:"diff,omitempty"`
	MainBranch     string             `json:"main_branch,omitempty"`
	Retention      *Retention         `json:"retention,omitempty"`
	Preset         string             `json:"preset,omitempty"`
	IncludeAA      *bool              `json:"include_aa,omitempty"`
	// AutoApproveBelow and FailAbove are the triage bands (triage.go).
	AutoApproveBelow *float64 `json:"auto_approve_below,omitempty"`
	FailAbove        *float64 `json:"fail_above,omitempty"`
	// BranchBaselineDays is SuiteSpec's.
	BranchBaselineDays *int                `json:"branch_baseline_days,omitempty"`
	Enabled            *bool               `json:"enabled,omitempty"`
	Webhook            *jobs.WebhookInput  `json:"webhook,omitempty"`
	VCS                *VCS                `json:"vcs,omitempty"`
	Notify             []Channel           `json:"notify,omitempty"`
	Discover           *DiscoverInput      `json:"discover,omitempty"`
	Volatility         *VolatilitySettings `json:"volatility,omitempty"`
}

// ScheduleInput is the wire form of Schedule; the time zone defaults to UTC.
type ScheduleInput struct {
	Cron     string `json:"cron"`
	Timezone string `json:"timezone"`
}

// IgnoreInput is the wire form of Ignore.
type IgnoreInput struct {
	Selectors []string `json:"selectors"`
	Rects     []Rect   `json:"rects"`
}

// ParseSuite decodes and validates a suite document. Like batches, any
// problem rejects the whole document with every bad field named.
// Schedules are held to DefaultMinScheduleInterval; Service.CreateSuite and
// UpdateSuite apply the Service's own minimum.
func ParseSuite(body []byte) (*Suite, error) {
	return parseSuite(body, DefaultMinScheduleInterval)
}

// parseSuite is ParseSuite with minInterval between schedule activations
// (negative: no minimum).
func parseSuite(body []byte, minInterval time.Duration) (*Suite, error) {
	var in SuiteInput
	var errs jobs.FieldErrors
	if !decodeSuite(body, &in, &errs) || len(errs) > 0 {
		return nil, jobs.ValidationErrors(errs)
	}
	s := in.validate(minInterval, &errs)
	if err := jobs.ValidationErrors(errs); err != nil {
		return nil, err
	}
	return s, nil
}

// decodeSuite decodes a suite document (or a patch of one) strictly; the
// pre-release webhook_url key gets a message that shows the webhook's form.
// Its problems go to errs; ok as jobs.DecodeStrict's.
func decodeSuite(body []byte, in *SuiteInput, errs *jobs.FieldErrors) (ok bool) {
	n := len(*errs)
	ok = jobs.DecodeStrict(body, in, "", errs)
	for i, e := range (*errs)[n:] {
		if e.Code == "unknown_field" && e.Field == "webhook_url" {
			(*errs)[n+i].Message = `give the suite's webhook as "webhook": {"url": "…", "secret": "…"}: deliveries are signed like batch webhooks`
		}
	}
	return ok
}

// Input returns the suite as the document a PATCH merges into; the webhook
// secret is left out (a PATCH without "webhook" keeps the stored one).
func (s *Suite) Input() map[string]any {
	doc := map[string]any{
		"name": s.Name, "targets": s.Spec.Targets, "threshold": s.Spec.Threshold,
		"pixel_threshold": s.Spec.PixelThreshold, "ignore": s.Spec.Ignore, "enabled": s.Enabled,
	}
	// The values a preset set are left to it, so a PATCH of the preset
	// alone changes them; values that differ are explicit and kept.
	sens := defaultSensitivity
	if p, ok := Presets[s.Spec.Preset]; ok {
		doc["preset"], sens = s.Spec.Preset, p
		if s.Spec.Threshold == p.Threshold {
			delete(doc, "threshold")
		}
		if s.Spec.PixelThreshold == p.PixelThreshold {
			delete(doc, "pixel_threshold")
		}
	}
	if s.Spec.IncludeAA != sens.IncludeAA {
		doc["include_aa"] = s.Spec.IncludeAA
	}
	if s.Spec.AutoApproveBelow > 0 {
		doc["auto_approve_below"] = s.Spec.AutoApproveBelow
	}
	if s.Spec.FailAbove > 0 {
		doc["fail_above"] = s.Spec.FailAbove
	}
	if s.Spec.Options != nil {
		doc["options"] = s.Spec.Options
	}
	if s.Spec.Diff != (DiffSettings{}) {
		doc["diff"] = s.Spec.Diff
	}
	if s.Schedule != nil {
		doc["schedule"] = s.Schedule
	}
	doc["main_branch"] = s.Spec.MainBranchOf()
	if s.Spec.Retention != nil {
		doc["retention"] = s.Spec.Retention
	}
	if s.Spec.BranchBaselineDays != nil {
		doc["branch_baseline_days"] = *s.Spec.BranchBaselineDays
	}
	if d := s.Spec.Discover; d != nil {
		doc["discover"] = d
	}
	if v := s.Spec.Volatility; v != nil {
		doc["volatility"] = v
	}
	return doc
}
