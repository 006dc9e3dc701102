package regression

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/robfig/cron/v3"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/diff"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/maintenance"
	"github.com/snapq/snapq/vcs"
)

// Visual regression: a suite names pages to watch; a run captures them (a
// batch of capture jobs, one per target and viewport) and compares every
// segment with the approved baseline of the same target, viewport and
// segment index (compare.go).

// Suite limits and defaults. They are documented in web/openapi.json (SuiteInput).
const (
	MaxSuiteTargets       = 100
	MaxSuiteViewports     = 10
	MaxIgnoreSelectors    = 50
	MaxIgnoreRects        = 50
	DefaultPixelThreshold = 0.1
	// StabilizeRetakes bounds the captures a regression job takes until two
	// consecutive ones match.
	StabilizeRetakes = 3
	// DefaultMinScheduleInterval is the shortest time allowed between two
	// activations of a suite's schedule (Service.MinScheduleInterval): every
	// run captures every target, so a schedule of "@every 1s" is a flood.
	DefaultMinScheduleInterval = 5 * time.Minute
)

// CodeScheduleTooFrequent is the field error of a schedule that would fire
// more often than the minimum interval.
const CodeScheduleTooFrequent = "schedule_too_frequent"

// Run statuses. They are part of the public API.
const (
	RunRunning     = "running"
	RunPassed      = "passed"
	RunFailed      = "failed"
	RunNeedsReview = "needs_review"
	RunError       = "error"
	RunApproved    = "approved"
)

// Comparison statuses. They are part of the public API.
const (
	ComparePassed  = "passed"
	CompareFailed  = "failed"
	CompareNew     = "new"
	CompareMissing = "missing"
	CompareError   = "error"
)

// Run triggers.
const (
	TriggerManual   = "manual"
	TriggerSchedule = "schedule"
)

// EventRunCompleted is the webhook event of a finished run.
const EventRunCompleted = "run.completed"

// Suite is a set of pages compared with their baselines on every run.
type Suite struct {
	ID         string
	OwnerKeyID string
	Name       string
	Spec       SuiteSpec
	Schedule   *Schedule
	Enabled    bool
	Webhook    *jobs.Webhook
	// VCS, when set, reports runs with a commit to the code host.
	VCS       *VCS
	CreatedAt time.Time
	UpdatedAt time.Time
	LastRun   *Run // newest run, without comparisons; nil before the first
	// OwnerRevoked is read, never written: the owner's API key is revoked, so
	// the schedule no longer fires.
	OwnerRevoked bool

	// Notify lists where settled runs are announced (notify.go).
	Notify []Channel
	// SecretsErr is read, never written: the stored vcs token or channel
	// secrets could not be opened (no SNAPQ_SECRET_KEY, or a key dropped
	// too early); they are empty then.
	SecretsErr error
}

// SuiteSpec is what a run captures and how it compares; it is stored as JSON
// and copied into every run.
type SuiteSpec struct {
	Targets        []SuiteTarget      `json:"targets"`
	Options        *jobs.OptionsInput `json:"options,omitempty"`
	Threshold      float64            `json:"threshold"`
	PixelThreshold float64            `json:"pixel_threshold"`
	Ignore         Ignore             `json:"ignore"`
	Diff           DiffSettings       `json:"diff"`
	// MainBranch is the branch a branch run falls back to and merges into
	// by default (DefaultMainBranch when empty).
	MainBranch string `json:"main_branch,omitempty"`
	// Retention, when set, deletes old runs (retention.go).
	Retention *Retention `json:"retention,omitempty"`
	// Preset is the sensitivity preset Threshold, PixelThreshold and
	// IncludeAA started from (triage.go); "" for none.
	Preset string `json:"preset,omitempty"`
	// IncludeAA counts anti-aliased pixels as differences.
	IncludeAA bool `json:"include_aa,omitempty"`
	// AutoApproveBelow and FailAbove are the triage bands (0: none).
	AutoApproveBelow float64 `json:"auto_approve_below,omitempty"`
	FailAbove        float64 `json:"fail_above,omitempty"`
	// BranchBaselineDays is how long a branch's baselines outlive the
	// branch's last run or approval (retention.go); nil: the default
	// (SNAPQ_BRANCH_BASELINE_DAYS), 0: never expire.
	BranchBaselineDays *int `json:"branch_baseline_days,omitempty"`
	// Discover, when set, adds the pages of a sitemap (or a crawl) to the targets on every run
	// (discover.go).
	Discover *Discover `json:"discover,omitempty"`
}

// Diff modes (SuiteSpec.Diff.Mode). They are part of the public API.
const (
	// DiffAligned compares a page's baseline and current capture as a whole:
	// rows are aligned across segment boundaries, so content that only moved
	// passes (shifted) and an inserted block is one change.
	DiffAligned = "aligned"
	// DiffPixel compares segment N with baseline segment N, top-anchored.
	DiffPixel = "pixel"
)

// Colour metrics (SuiteSpec.Diff.ColorMetric). They are part of the public API.
const (
	MetricYIQ   = "yiq"
	MetricOKLab = "oklab"
)

// Hunk is a run of rows inserted, removed, changed or equal between a
// baseline page and a current one (diff.Hunk).
type Hunk = diff.Hunk

// DiffSettings says how a run compares captures with baselines.
type DiffSettings struct {
	// Mode is DiffAligned or DiffPixel; empty means aligned for `segments`
	// captures and pixel for the others.
	Mode string `json:"mode,omitempty"`
	// ColorMetric is MetricYIQ (the default, pixelmatch's) or MetricOKLab.
	ColorMetric string `json:"color_metric,omitempty"`
}

// ModeFor is the diff mode used for a capture taken in screenshot mode shot.
func (d DiffSettings) ModeFor(shot string) string {
	if d.Mode != "" {
		return d.Mode
	}
	if shot == capture.ModeSegments {
		return DiffAligned
	}
	return DiffPixel
}

// SuiteTarget is one page of a suite.
type SuiteTarget struct {
	URL       string             `json:"url"`
	Name      string             `json:"name"`
	Options   *jobs.OptionsInput `json:"options,omitempty"`
	Viewports []ViewportSize     `json:"viewports,omitempty"`
	// FinalScreenshot false leaves the page's final screenshot out of the
	// comparison: the target's checkpoints are its screenshot actions only
	// (journeys, checkpoint.go). nil or true: the final screenshot is the
	// target's last checkpoint.
	FinalScreenshot *bool `json:"final_screenshot,omitempty"`
	// Triage overrides the suite's sensitivity and bands for this target.
	Triage
}

// ViewportSize is one window size a target is captured at.
type ViewportSize struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

// String is the viewport's key in comparisons and baselines: "1280x720".
func (v ViewportSize) String() string { return fmt.Sprintf("%dx%d", v.Width, v.Height) }

// Ignore is what a comparison does not look at: the boxes of elements
// matching the selectors (measured at capture time) and rectangles (CSS
// pixels, page coordinates), both masked in the diff.
type Ignore struct {
	Selectors []string `json:"selectors"`
	Rects     []Rect   `json:"rects"`
}

// Rect is a rectangle in CSS pixels.
type Rect struct {
	X      int `json:"x"`
	Y      int `json:"y"`
	Width  int `json:"width"`
	Height int `json:"height"`
}

// Schedule runs a suite on a cron expression in a time zone.
type Schedule struct {
	Cron     string `json:"cron"`
	Timezone string `json:"timezone"`
}

// Spec is the schedule in asynq's scheduler syntax.
func (s Schedule) Spec() string { return "CRON_TZ=" + s.Timezone + " " + s.Cron }

// cronParser accepts standard five-field expressions and descriptors (@hourly).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ShortestGap is the shortest time between two consecutive activations
// among those of the week after from (at least activationsChecked of them, so
// a pattern of close activations anywhere in a day or a week shows), however
// the expression is written: "@every 1s", "* * * * *", "*/1 * * * *",
// "0,3 * * * *" or "* 6 * * 1-5".
func (s Schedule) ShortestGap(from time.Time) (time.Duration, error) {
	sched, err := cronParser.Parse(s.Spec())
	if err != nil {
		return 0, err
	}
	shortest := time.Duration(math.MaxInt64)
	prev := sched.Next(from)
	end := prev.Add(8 * 24 * time.Hour)
	for i := 0; i < activationsChecked || prev.Before(end); i++ {
		next := sched.Next(prev)
		if next.IsZero() || i >= maxActivationsChecked {
			break
		}
		shortest = min(shortest, next.Sub(prev))
		prev = next
	}
	return shortest, nil
}

// ShortestGap looks at the activations of a week, but at least
// activationsChecked and at most maxActivationsChecked of them (a week of
// five-minute activations is 2,016).
const (
	activationsChecked    = 100
	maxActivationsChecked = 5000
)

// LastActivation is the latest time at or before now the schedule fired.
func (s Schedule) LastActivation(now time.Time) (time.Time, error) {
	sched, err := cronParser.Parse(s.Spec())
	if err != nil {
		return time.Time{}, err
	}
	for _, back := range []time.Duration{2 * time.Hour, 49 * time.Hour, 32 * 24 * time.Hour, 367 * 24 * time.Hour, 5 * 366 * 24 * time.Hour} {
		t := sched.Next(now.Add(-back))
		if t.IsZero() || t.After(now) {
			continue
		}
		for {
			n := sched.Next(t)
			if n.IsZero() || n.After(now) {
				return t, nil
			}
			t = n
		}
	}
	return time.Time{}, fmt.Errorf("schedule %q has not fired in five years", s.Cron)
}

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
	BranchBaselineDays *int               `json:"branch_baseline_days,omitempty"`
	Enabled            *bool              `json:"enabled,omitempty"`
	Webhook            *jobs.WebhookInput `json:"webhook,omitempty"`
	VCS                *VCS               `json:"vcs,omitempty"`
	Notify             []Channel          `json:"notify,omitempty"`
	Discover           *DiscoverInput     `json:"discover,omitempty"`
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
	errs, ok := decodeSuite(body, &in)
	if !ok || len(errs) > 0 {
		return nil, jobs.ValidationErrors(errs)
	}
	s := in.validate(&errs, minInterval)
	if err := jobs.ValidationErrors(errs); err != nil {
		return nil, err
	}
	return s, nil
}

// decodeSuite decodes a suite document (or a patch of one) strictly; the
// pre-release webhook_url key gets a message that shows the webhook's form.
func decodeSuite(body []byte, in *SuiteInput) (jobs.FieldErrors, bool) {
	errs, ok := jobs.DecodeStrict(body, in, "")
	for i, e := range errs {
		if e.Code == "unknown_field" && e.Field == "webhook_url" {
			errs[i].Message = `give the suite's webhook as "webhook": {"url": "…", "secret": "…"}: deliveries are signed like batch webhooks`
		}
	}
	return errs, ok
}

func (in *SuiteInput) validate(errs *jobs.FieldErrors, minInterval time.Duration) *Suite {
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
	_, suiteErrs := jobs.ResolveOptions(in.Options, "options", nil, "")
	*errs = append(*errs, suiteErrs...)
	s.Spec.Options = in.Options
	names := map[string]int{}
	for i, t := range in.Targets {
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
		if len(suiteErrs) == 0 {
			_, targetErrs := jobs.ResolveOptions(in.Options, "options", t.Options, p+".options")
			*errs = append(*errs, targetErrs...)
		}
		if len(t.Viewports) > MaxSuiteViewports {
			errs.Add("invalid_viewports", p+".viewports", fmt.Sprintf("at most %d viewports", MaxSuiteViewports))
		}
		for j, v := range t.Viewports {
			vp := fmt.Sprintf("%s.viewports[%d]", p, j)
			if v.Width < jobs.MinViewportSide || v.Width > jobs.MaxViewportSide {
				errs.Add("invalid_option", vp+".width", fmt.Sprintf("must be %d-%d", jobs.MinViewportSide, jobs.MaxViewportSide))
			}
			if v.Height < jobs.MinViewportSide || v.Height > jobs.MaxViewportSide {
				errs.Add("invalid_option", vp+".height", fmt.Sprintf("must be %d-%d", jobs.MinViewportSide, jobs.MaxViewportSide))
			}
		}
		if t.FinalScreenshot != nil && !*t.FinalScreenshot && len(suiteErrs) == 0 {
			if o, oerrs := jobs.ResolveOptions(in.Options, "options", t.Options, p+".options"); len(oerrs) == 0 && len(checkpointActions(o.Actions)) == 0 {
				errs.Add("invalid_option", p+".final_screenshot", "a target without its final screenshot needs at least one screenshot action (a checkpoint)")
			}
		}
		t.Triage.validate(p+".", errs)
		s.Spec.Targets = append(s.Spec.Targets, SuiteTarget{URL: u, Name: name, Options: t.Options, Viewports: t.Viewports,
			FinalScreenshot: t.FinalScreenshot, Triage: t.Triage})
	}
	// A preset sets the sensitivity together; explicit fields override it.
	sens := defaultSensitivity
	validatePreset(in.Preset, "preset", errs)
	if p, ok := Presets[in.Preset]; ok {
		sens, s.Spec.Preset = p, in.Preset
	}
	s.Spec.Threshold = ratioField(in.Threshold, sens.Threshold, "threshold", errs)
	s.Spec.PixelThreshold = ratioField(in.PixelThreshold, sens.PixelThreshold, "pixel_threshold", errs)
	s.Spec.IncludeAA = sens.IncludeAA
	if in.IncludeAA != nil {
		s.Spec.IncludeAA = *in.IncludeAA
	}
	validateBands(in.AutoApproveBelow, in.FailAbove, "", errs)
	if in.AutoApproveBelow != nil {
		s.Spec.AutoApproveBelow = *in.AutoApproveBelow
	}
	if in.FailAbove != nil {
		s.Spec.FailAbove = *in.FailAbove
	}
	s.Spec.Ignore = validateIgnore(in.Ignore, errs)
	s.Spec.Diff = validateDiff(in.Diff, errs)
	s.Spec.MainBranch = strings.TrimSpace(in.MainBranch)
	checkBranch(s.Spec.MainBranch, "main_branch", errs)
	if s.Spec.MainBranch == "" {
		s.Spec.MainBranch = DefaultMainBranch
	}
	s.Schedule = validateSchedule(in.Schedule, minInterval, errs)
	s.Spec.Retention = validateRetention(in.Retention, errs)
	if d := in.BranchBaselineDays; d != nil {
		if *d < 0 || *d > maintenance.MaxRetentionDays {
			errs.Add("invalid_option", "branch_baseline_days", fmt.Sprintf("must be 0 (never expire) to %d days", maintenance.MaxRetentionDays))
		}
		v := *d
		s.Spec.BranchBaselineDays = &v
	}
	s.Spec.Discover = validateDiscover(in.Discover, in.Options, errs)
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
	return s
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

func validateSchedule(in *ScheduleInput, minInterval time.Duration, errs *jobs.FieldErrors) *Schedule {
	if in == nil {
		return nil
	}
	s := &Schedule{Cron: strings.Join(strings.Fields(in.Cron), " "), Timezone: in.Timezone}
	if s.Timezone == "" {
		s.Timezone = "UTC"
	}
	if _, err := time.LoadLocation(s.Timezone); err != nil || strings.ContainsAny(s.Timezone, " \t") {
		errs.Add("invalid_timezone", "schedule.timezone", "must be an IANA time zone such as Europe/Paris or UTC")
		return nil
	}
	if strings.Contains(s.Cron, "TZ=") {
		errs.Add("invalid_schedule", "schedule.cron", "give the time zone in schedule.timezone, not in the expression")
		return nil
	}
	if _, err := cronParser.Parse(s.Spec()); err != nil || s.Cron == "" {
		msg := "must be a five-field cron expression (minute hour day-of-month month day-of-week) or a descriptor such as @hourly"
		if err != nil {
			msg += ": " + err.Error()
		}
		errs.Add("invalid_schedule", "schedule.cron", msg)
		return nil
	}
	if err := s.checkInterval(time.Now(), minInterval); err != nil {
		errs.Add(CodeScheduleTooFrequent, "schedule.cron", err.Error())
		return nil
	}
	return s
}

// checkInterval says why the schedule fires more often than minInterval
// allows (negative: no minimum), or nil.
func (s Schedule) checkInterval(from time.Time, minInterval time.Duration) error {
	if minInterval < 0 {
		return nil
	}
	gap, err := s.ShortestGap(from)
	if err != nil {
		return err
	}
	if gap < minInterval {
		return fmt.Errorf("%q fires %s after a previous run; the minimum interval between runs is %s",
			s.Cron, shortDuration(gap), shortDuration(minInterval))
	}
	return nil
}

// shortDuration writes 5m rather than 5m0s.
func shortDuration(d time.Duration) string {
	out := d.String()
	if strings.HasSuffix(out, "m0s") {
		out = strings.TrimSuffix(out, "0s")
	}
	if strings.HasSuffix(out, "h0m") {
		out = strings.TrimSuffix(out, "0m")
	}
	return out
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
	return doc
}

// Captures expands the suite into its capture jobs: one per target and
// viewport, with stabilization applied and PNG forced (diffs need lossless
// images). Names are "<target>-<width>x<height>".
func (sp SuiteSpec) Captures() ([]jobs.NewJob, []CaptureKey, error) {
	var out []jobs.NewJob
	var keys []CaptureKey
	for i, t := range sp.Targets {
		base, errs := jobs.ResolveOptions(sp.Options, "options", t.Options, fmt.Sprintf("targets[%d].options", i))
		if len(errs) > 0 {
			return nil, nil, &jobs.ValidationError{Fields: errs}
		}
		vps := t.Viewports
		if len(vps) == 0 {
			vps = []ViewportSize{{Width: base.Viewport.Width, Height: base.Viewport.Height}}
		}
		for _, v := range vps {
			o := base
			o.Viewport.Width, o.Viewport.Height = v.Width, v.Height
			sp.stabilize(&o)
			out = append(out, jobs.NewJob{URL: t.URL, Name: t.Name + "-" + v.String(), Options: o})
			keys = append(keys, CaptureKey{Target: t.Name, Viewport: v.String()})
		}
	}
	return out, keys, nil
}

// SharedOptions are the options of a capture of a target without options of its own at
// the suite's viewport: what a run's jobs share (jobs.Batch.JobOptions), so each stores
// only its target's overrides and viewport.
func (sp SuiteSpec) SharedOptions() jobs.Options {
	o, _ := jobs.ResolveOptions(sp.Options, "options", nil, "")
	sp.stabilize(&o)
	return o
}

// stabilize makes a capture repeatable: no animations, transitions or caret,
// reduced motion, fonts and images ready, and retakes until two consecutive
// captures match. Ignored elements are measured, then masked in the diff.
func (sp SuiteSpec) stabilize(o *jobs.Options) {
	o.Outputs = []string{capture.OutputScreenshot}
	o.Screenshot.Format, o.Screenshot.Quality = capture.FormatPNG, 0
	o.Prepare.DisableAnimations = true // animations, transitions and the caret (capture/prepare.go)
	if o.Prepare.Consent == "" {
		o.Prepare.Consent = capture.ConsentHide // consent banners hidden unless the suite says off/accept
	}
	o.MaskSelectors = append([]string(nil), sp.Ignore.Selectors...)
	o.BoxTree = true // the comparison explains its changes by elements (changes.go)
	o.Emulate.ReducedMotion = true
	o.Wait.Fonts, o.Wait.Images = true, true
	o.Stabilize = StabilizeRetakes
	journey(o)
}

// CaptureKey says which target and viewport a run's capture job shows.
type CaptureKey struct {
	Target   string
	Viewport string
	// JobID is the capture job ("" before the run is written: CreateRun
	// then pairs keys and jobs by index).
	JobID string
	// ReferenceJobID is, in an environment pair run, the capture of the
	// same target and viewport on the reference origin (envpair.go).
	ReferenceJobID string
}

// Run is one execution of a suite.
type Run struct {
	ID           string
	SuiteID      string
	BatchID      string
	Trigger      string
	ScheduledFor *time.Time
	Status       string
	Spec         SuiteSpec
	// Branch, BaseBranch, Commit and BaseURL are RunOptions': "" is none
	// (the suite's main branch for the branches).
	Branch       string
	BaseBranch   string
	Commit       string
	BaseURL      string
	PullRequest  int
	DashboardURL string
	// CompareTo is an environment pair run's reference origin ("": a run
	// compared with baselines).
	CompareTo string
	// CheckRunID is the GitHub check run that reports the run ("": none yet).
	CheckRunID  string
	Counts      RunCounts
	CreatedAt   time.Time
	FinishedAt  *time.Time
	Comparisons []*Comparison // filled by GetRun only
	// Notifications are the run's messages to its suite's channels
	// (filled by GetRun only).
	Notifications []*Notification
	// Removed, written with a new run, are the missing comparisons of pages a
	// discovering suite no longer finds (discover.go); not read back.
	Removed []*Comparison
}

// RunSummary is the run.completed webhook's data.
type RunSummary struct {
	ID         string     `json:"id"`
	SuiteID    string     `json:"suite_id"`
	BatchID    string     `json:"batch_id"`
	Trigger    string     `json:"trigger"`
	Status     string     `json:"status"`
	Counts     RunCounts  `json:"counts"`
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// Summary returns the run without its comparisons.
func (r *Run) Summary() RunSummary {
	return RunSummary{ID: r.ID, SuiteID: r.SuiteID, BatchID: r.BatchID, Trigger: r.Trigger, Status: r.Status,
		Counts: r.Counts, CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt}
}

// RunCounts counts a run's comparisons by status; Pending counts captures not
// compared yet.
type RunCounts struct {
	Total   int `json:"total"`
	Pending int `json:"pending"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	New     int `json:"new"`
	Missing int `json:"missing"`
	Error   int `json:"error"`
	// ToReview counts the failed, new and missing comparisons nobody
	// approved yet: what "approve all" would approve.
	ToReview int `json:"to_review"`
}

// Comparison is one segment of one capture set against its baseline.
type Comparison struct {
	ID         string
	RunID      string
	JobID      string
	Target     string
	Viewport   string
	Segment    int
	Status     string
	DiffPixels int64
	DiffRatio  float64
	Threshold  float64
	Message    string
	// DiffMode is DiffPixel or DiffAligned.
	DiffMode string
	// ShiftedPx is how far the segment's content moved down since the
	// baseline (image pixels; negative: up), in aligned mode.
	ShiftedPx int
	// Hunks are the page's non-equal hunks touching the segment (page
	// coordinates in image pixels: A the baseline, B the current capture).
	Hunks []Hunk
	// Checkpoint is the name of the screenshot action the comparison shows,
	// "" for the page's final screenshot (checkpoint.go).
	Checkpoint string
	// Step is the checkpoint's screenshot action's index in the target's
	// actions; nil for the final screenshot.
	Step *int
	// FailedStep is the index of the action whose failure left this
	// checkpoint an error (nil: none).
	FailedStep       *int
	BaselineID       string
	BaselineArtifact *jobs.Artifact
	CurrentArtifact  *jobs.Artifact
	DiffArtifact     *jobs.Artifact
	ApprovedAt       *time.Time
	// Changes explain the differing pixels by elements (changes.go); nil
	// when nothing differed or no box tree was recorded.
	Changes []Change

	// GroupKey identifies the change the comparison shows (group.go); ""
	// when no pixel changed.
	GroupKey string
	// MatchesPrevious names the superseded baseline version the current
	// image is identical to: the comparison passed for it (approval memory).
	MatchesPrevious *PreviousMatch
	// AutoApproved says the comparison passed because its ratio was below
	// the auto_approve_below band.
	AutoApproved bool
	// RejectedAt and RejectedBy say a reviewer rejected the change: it stays
	// failed.
	RejectedAt *time.Time
	RejectedBy string

	sizeChanged bool // the images' sizes differ: never auto-approved
}

// PreviousMatch is the baseline version an image is identical to.
type PreviousMatch struct {
	BaselineID string `json:"baseline_id"`
	Version    int    `json:"version"`
}

// Baseline is one version of the approved image of a target, viewport and segment.
type Baseline struct {
	ID       string
	SuiteID  string
	Target   string
	Viewport string
	Segment  int
	Version  int
	// Checkpoint is the screenshot action's name, "" for the final screenshot.
	Checkpoint   string
	Artifact     *jobs.Artifact // nil: this version removed the segment
	RunID        string
	RestoredFrom string
	ApprovedBy   string
	ApprovedAt   time.Time
	Active       bool
	// Branch is the baseline's branch key: MainLine or a branch's name.
	Branch string
}

// Key is the baseline's comparison key.
func (b *Baseline) Key() string {
	return b.Target + "\x00" + b.Checkpoint + "\x00" + b.Viewport + "\x00" + strconv.Itoa(b.Segment)
}

// Approval selects what POST /v1/runs/:id/approve promotes.
type Approval struct {
	All         bool     `json:"all"`
	Targets     []string `json:"targets"`
	Comparisons []string `json:"comparisons"`
	// Statuses approves every comparison of the run in one of these
	// statuses (failed, new, missing): what a filtered review approves.
	Statuses []string `json:"status"`
}

// ComparisonFilter picks a run's comparisons in a list: Statuses (none: any)
// and, when set, whether they are approved.
type ComparisonFilter struct {
	Statuses []string
	Approved *bool
}

// RunCompletedEvent builds the data of a run.completed webhook event (the
// run's summary) and when the run finished; the worker hands it to the
// webhook handler for EventRunCompleted.
func RunCompletedEvent(repo RunsOfBatches) func(ctx context.Context, batchID string) (any, *time.Time, error) {
	return func(ctx context.Context, batchID string) (any, *time.Time, error) {
		r, err := repo.RunOfBatch(ctx, batchID)
		if err != nil {
			return nil, nil, fmt.Errorf("load run of batch %s: %w", batchID, err)
		}
		return r.Summary(), r.FinishedAt, nil
	}
}
