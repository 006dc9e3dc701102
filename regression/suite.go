package regression

import (
	"fmt"
	"time"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/diff"
	"github.com/snapq/snapq/jobs"
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
	// Volatility, when set, is how the suite uses what it learns of its
	// volatile regions (volatility.go, volatilitymask.go); nil: off.
	Volatility *VolatilitySettings `json:"volatility,omitempty"`
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

// Captures expands the suite into its capture jobs: one per target and
// viewport, with stabilization applied and PNG forced (diffs need lossless
// images). Names are "<target>-<width>x<height>".
func (sp SuiteSpec) Captures() ([]jobs.NewJob, []CaptureKey, error) {
	var out []jobs.NewJob
	var keys []CaptureKey
	for i, t := range sp.Targets {
		var errs jobs.FieldErrors
		base := jobs.ResolveOptions(sp.Options, "options", t.Options, fmt.Sprintf("targets[%d].options", i), &errs)
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
	var ignored jobs.FieldErrors // the suite was validated
	o := jobs.ResolveOptions(sp.Options, "options", nil, "", &ignored)
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
