package web

import (
	"time"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

// The JSON bodies of the API's successful answers. A batch is jobs.BatchView,
// the same value webhook events carry as "data". Fields that are null when
// empty are pointers; lists are never nil, so they encode as [], not null.

type healthResponse struct {
	Status string `json:"status"`
}

type readyResponse struct {
	Status string            `json:"status"` // ready or unavailable
	Checks map[string]string `json:"checks"` // check name: "ok" or its error
}

// batchCreated answers POST /v1/batches: the batch and its jobs.
type batchCreated struct {
	jobs.BatchView
	Jobs []jobSummary `json:"jobs"`
}

type jobSummary struct {
	ID     string         `json:"id"`
	URL    string         `json:"url"`
	Name   string         `json:"name"`
	Status jobs.JobStatus `json:"status"`
}

type batchList struct {
	Batches    []jobs.BatchView `json:"batches"`
	NextCursor *string          `json:"next_cursor"`
}

// jobView is a job as GET /v1/jobs/:id and its list show it.
type jobView struct {
	ID         string         `json:"id"`
	BatchID    string         `json:"batch_id"`
	URL        string         `json:"url"`
	Name       string         `json:"name"`
	Status     jobs.JobStatus `json:"status"`
	Attempts   int            `json:"attempts"`
	Error      *jobs.JobError `json:"error"`
	Result     *jobs.Result   `json:"result"`
	Options    jobs.Options   `json:"options"`
	CreatedAt  time.Time      `json:"created_at"`
	StartedAt  *time.Time     `json:"started_at"`
	FinishedAt *time.Time     `json:"finished_at"`
	// Crawl is where a crawl batch's job sits in the crawl; absent for other jobs.
	Crawl *crawlPosView `json:"crawl,omitempty"`
}

// crawlPosView is a crawl job's depth (0: the start page) and the job and page that
// linked to it (absent for the start page).
type crawlPosView struct {
	Depth    int     `json:"depth"`
	ParentID *string `json:"parent_id,omitempty"`
	FoundOn  *string `json:"found_on,omitempty"`
}

func newJobView(j *jobs.Job) jobView {
	var jerr *jobs.JobError
	if j.ErrorCode != "" {
		jerr = &jobs.JobError{Code: j.ErrorCode, Message: j.ErrorMessage}
	}
	res := j.Result
	if res != nil && res.Elements != nil { // the box tree is the comparison's, not the reader's
		cp := *res
		cp.Elements = nil
		res = &cp
	}
	return jobView{ID: j.ID, BatchID: j.BatchID, URL: j.URL, Name: j.Name, Status: j.Status,
		Attempts: j.Attempts, Error: jerr, Result: res, Options: j.Options,
		CreatedAt: j.CreatedAt, StartedAt: j.StartedAt, FinishedAt: j.FinishedAt, Crawl: newCrawlPosView(j.Crawl)}
}

func newCrawlPosView(c *jobs.CrawlPos) *crawlPosView {
	if c == nil {
		return nil
	}
	v := &crawlPosView{Depth: c.Depth}
	if c.ParentID != "" {
		v.ParentID, v.FoundOn = &c.ParentID, &c.FoundOn
	}
	return v
}

// jobWithPreview is a job in GET /v1/batches/:id/jobs, with its first
// screenshot for thumbnails.
type jobWithPreview struct {
	jobView
	Preview *imageRef `json:"preview"`
}

type jobList struct {
	Jobs       []jobWithPreview `json:"jobs"`
	NextCursor *string          `json:"next_cursor"`
}

// jobWithArtifacts answers GET /v1/jobs/:id.
type jobWithArtifacts struct {
	jobView
	Artifacts []artifactView `json:"artifacts"`
}

type artifactView struct {
	ID          string `json:"id"`
	Kind        string `json:"kind"`
	Name        string `json:"name"`
	ContentType string `json:"content_type"`
	Bytes       int64  `json:"bytes"`
	Width       int    `json:"width"`
	Height      int    `json:"height"`
	SHA256      string `json:"sha256"`
	URL         string `json:"url"`
}

// imageRef points at an image artifact: previews, baselines, diffs.
type imageRef struct {
	ArtifactID string `json:"artifact_id"`
	URL        string `json:"url"`
	Width      int    `json:"width"`
	Height     int    `json:"height"`
	// Thumbnail is the image's small preview, when it has one: what lists
	// and the dashboard show.
	Thumbnail *thumbnailRef `json:"thumbnail,omitempty"`
}

type thumbnailRef struct {
	URL    string `json:"url"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Bytes  int64  `json:"bytes"`
}

// newImageRef returns nil (JSON null) for no artifact.
func newImageRef(a *jobs.Artifact, base string) *imageRef {
	if a == nil {
		return nil
	}
	ref := &imageRef{ArtifactID: a.ID, URL: base + "/v1/artifacts/" + a.ID, Width: a.Width, Height: a.Height}
	if t := a.Thumbnail; t != nil {
		ref.Thumbnail = &thumbnailRef{URL: ref.URL + "/thumbnail", Width: t.Width, Height: t.Height, Bytes: t.Bytes}
	}
	return ref
}

// webhookRef shows a webhook's URL, never its secret.
type webhookRef struct {
	URL string `json:"url"`
}

type deliveryView struct {
	ID          string     `json:"id"`
	Event       string     `json:"event"`
	Status      string     `json:"status"`
	Attempts    int        `json:"attempts"`
	LastStatus  *int       `json:"last_status"` // null when there was no response
	LastError   *string    `json:"last_error"`
	CreatedAt   time.Time  `json:"created_at"`
	DeliveredAt *time.Time `json:"delivered_at"`
}

// webhookList answers GET /v1/batches/:id/webhooks.
type webhookList struct {
	Webhook    *webhookRef    `json:"webhook"`
	Deliveries []deliveryView `json:"deliveries"`
}

type suiteView struct {
	ID             string                   `json:"id"`
	Name           string                   `json:"name"`
	Targets        []regression.SuiteTarget `json:"targets"`
	Options        *jobs.OptionsInput       `json:"options"`
	Schedule       *regression.Schedule     `json:"schedule"`
	Threshold      float64                  `json:"threshold"`
	PixelThreshold float64                  `json:"pixel_threshold"`
	Ignore         regression.Ignore        `json:"ignore"`
	Diff           regression.DiffSettings  `json:"diff"`
	// Preset is the sensitivity preset (null: none); IncludeAA counts
	// anti-aliased pixels; AutoApproveBelow and FailAbove are the triage
	// bands (null: none).
	Preset           *string               `json:"preset"`
	IncludeAA        bool                  `json:"include_aa"`
	AutoApproveBelow *float64              `json:"auto_approve_below"`
	FailAbove        *float64              `json:"fail_above"`
	MainBranch       string                `json:"main_branch"`
	Retention        *regression.Retention `json:"retention"`
	// BranchBaselineDays is null for the default (SNAPQ_BRANCH_BASELINE_DAYS).
	BranchBaselineDays *int                 `json:"branch_baseline_days"`
	Discover           *regression.Discover `json:"discover,omitempty"`
	// Volatility is how the suite uses its learned volatile regions,
	// defaults filled in.
	Volatility regression.VolatilitySettings `json:"volatility"`
	Enabled    bool                          `json:"enabled"`
	Webhook    *webhookRef                   `json:"webhook"`
	VCS        *regression.VCS               `json:"vcs"` // without its token
	CreatedAt  time.Time                     `json:"created_at"`
	UpdatedAt  time.Time                     `json:"updated_at"`
	LastRun    *lastRun                      `json:"last_run"`

	// Notify is the suite's channels without their urls and secrets.
	Notify []regression.Channel `json:"notify"`
}

type lastRun struct {
	ID         string               `json:"id"`
	Status     regression.RunStatus `json:"status"`
	CreatedAt  time.Time            `json:"created_at"`
	FinishedAt *time.Time           `json:"finished_at"`
}

func newSuiteView(su *regression.Suite) suiteView {
	out := suiteView{ID: su.ID, Name: su.Name, Targets: nonNilTargets(su.Spec.Targets), Options: su.Spec.Options,
		Schedule: su.Schedule, Threshold: su.Spec.Threshold, PixelThreshold: su.Spec.PixelThreshold,
		Ignore: su.Spec.Ignore, Diff: su.Spec.Diff, Preset: nullable(su.Spec.Preset), IncludeAA: su.Spec.IncludeAA,
		AutoApproveBelow: positive(su.Spec.AutoApproveBelow), FailAbove: positive(su.Spec.FailAbove), MainBranch: su.Spec.MainBranchOf(), Retention: su.Spec.Retention, Discover: su.Spec.Discover,
		BranchBaselineDays: su.Spec.BranchBaselineDays, Volatility: su.Spec.VolatilityOf(), Enabled: su.Enabled, CreatedAt: su.CreatedAt, UpdatedAt: su.UpdatedAt}
	if su.Webhook != nil {
		out.Webhook = &webhookRef{URL: su.Webhook.URL}
	}
	if su.VCS != nil {
		v := su.VCS.Public()
		out.VCS = &v
	}
	out.Notify = make([]regression.Channel, len(su.Notify))
	for i, c := range su.Notify {
		out.Notify[i] = c.Public()
	}
	if r := su.LastRun; r != nil {
		out.LastRun = &lastRun{ID: r.ID, Status: r.Status, CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt}
	}
	return out
}

type suiteList struct {
	Suites     []suiteView `json:"suites"`
	NextCursor *string     `json:"next_cursor"`
}

type runView struct {
	ID           string               `json:"id"`
	SuiteID      string               `json:"suite_id"`
	BatchID      string               `json:"batch_id"`
	Trigger      string               `json:"trigger"`
	ScheduledFor *time.Time           `json:"scheduled_for"`
	Status       regression.RunStatus `json:"status"`
	Counts       regression.RunCounts `json:"counts"`
	CreatedAt    time.Time            `json:"created_at"`
	FinishedAt   *time.Time           `json:"finished_at"`
	// Branch, BaseBranch, Commit and BaseURL are null for a run without them.
	Branch     *string `json:"branch"`
	BaseBranch *string `json:"base_branch"`
	Commit     *string `json:"commit"`
	BaseURL    *string `json:"base_url"`
	// CompareToBaseURL is an environment pair run's reference origin (its
	// comparisons' "baseline" images are the captures on it); null for a
	// run compared with baselines.
	CompareToBaseURL *string `json:"compare_to_base_url"`
	// PullRequest is null without one.
	PullRequest *int `json:"pull_request"`
	// ReviewURL is the run's page in the dashboard.
	ReviewURL string `json:"review_url"`
	// Comparisons is left out of lists (the run was loaded without them),
	// and [] for a run that has none.
	Comparisons *[]comparisonView `json:"comparisons,omitempty"`
	// Notifications are the run's messages to its suite's channels; left
	// out of lists, like Comparisons.
	Notifications *[]notificationView `json:"notifications,omitempty"`
}

// notificationView is one of a run's notifications.
type notificationView struct {
	ID          string     `json:"id"`
	Channel     string     `json:"channel"` // the channel's id in the suite's notify list
	Kind        string     `json:"kind"`
	Reason      string     `json:"reason"`
	Status      string     `json:"status"`
	Attempts    int        `json:"attempts"`
	LastError   string     `json:"last_error"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	DeliveredAt *time.Time `json:"delivered_at"`
}

type comparisonView struct {
	ID         string                   `json:"id"`
	JobID      string                   `json:"job_id"`
	Target     string                   `json:"target"`
	Viewport   string                   `json:"viewport"`
	Segment    int                      `json:"segment"`
	Status     regression.CompareStatus `json:"status"`
	DiffPixels int64                    `json:"diff_pixels"`
	DiffRatio  float64                  `json:"diff_ratio"`
	Threshold  float64                  `json:"threshold"`
	Message    string                   `json:"message"`
	// DiffMode is "pixel" or "aligned"; ShiftedPx how far the content moved
	// down since the baseline (image pixels); Hunks the page's inserted,
	// removed and changed rows touching the segment.
	DiffMode   string            `json:"diff_mode"`
	ShiftedPx  int               `json:"shifted_px"`
	Hunks      []regression.Hunk `json:"hunks"`
	Baseline   *imageRef         `json:"baseline"`
	Current    *imageRef         `json:"current"`
	Diff       *imageRef         `json:"diff"`
	Approved   bool              `json:"approved"`
	ApprovedAt *time.Time        `json:"approved_at"`
	// Checkpoint is the screenshot action the comparison shows ("" for the
	// page's final screenshot), Step its index in the target's actions (null
	// for the final screenshot), FailedStep the index of the action whose
	// failure made it an error (null: none).
	Checkpoint string `json:"checkpoint"`
	Step       *int   `json:"step"`
	FailedStep *int   `json:"failed_step"`
	// GroupKey is the change group the comparison belongs to (null: no
	// pixel changed); GET /v1/runs/:id/groups lists the groups.
	GroupKey *string `json:"group_key"`
	// MatchesPrevious names the superseded baseline version the current
	// image is identical to (it passed for it); null: none.
	MatchesPrevious *regression.PreviousMatch `json:"matches_previous"`
	// AutoApproved: passed below the auto_approve_below band.
	AutoApproved bool `json:"auto_approved"`
	// Rejected: a reviewer rejected the change (it stays failed).
	Rejected   bool       `json:"rejected"`
	RejectedAt *time.Time `json:"rejected_at"`
	RejectedBy *string    `json:"rejected_by"`
	// MaskedRegions are the learned-volatile regions whose changes the
	// comparison masked (suite volatility mode mask); [] for none.
	MaskedRegions []regression.MaskedRegion `json:"masked_regions"`
}

func newComparisonView(cmp *regression.Comparison, base string) comparisonView {
	return comparisonView{ID: cmp.ID, JobID: cmp.JobID, Target: cmp.Target, Viewport: cmp.Viewport,
		Segment: cmp.Segment, Status: cmp.Status, DiffPixels: cmp.DiffPixels,
		DiffRatio: cmp.DiffRatio, Threshold: cmp.Threshold, Message: cmp.Message,
		DiffMode: cmp.DiffMode, ShiftedPx: cmp.ShiftedPx, Hunks: nonNilHunks(cmp.Hunks),
		Baseline: newImageRef(cmp.BaselineArtifact, base), Current: newImageRef(cmp.CurrentArtifact, base),
		Diff: newImageRef(cmp.DiffArtifact, base), Approved: cmp.ApprovedAt != nil, ApprovedAt: cmp.ApprovedAt,
		Checkpoint: cmp.Checkpoint, Step: cmp.Step, FailedStep: cmp.FailedStep, GroupKey: nullable(cmp.GroupKey),
		MatchesPrevious: cmp.MatchesPrevious, AutoApproved: cmp.AutoApproved, Rejected: cmp.RejectedAt != nil,
		RejectedAt: cmp.RejectedAt, RejectedBy: nullable(cmp.RejectedBy), MaskedRegions: nonNilMasked(cmp.MaskedRegions)}
}

// nonNilMasked is a comparison's masked regions, [] for none.
func nonNilMasked(m []regression.MaskedRegion) []regression.MaskedRegion {
	if m == nil {
		return []regression.MaskedRegion{}
	}
	return m
}

func newRunView(r *regression.Run, base string) runView {
	out := runView{ID: r.ID, SuiteID: r.SuiteID, BatchID: r.BatchID, Trigger: r.Trigger,
		ScheduledFor: r.ScheduledFor, Status: r.Status, Counts: r.Counts,
		CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt, Branch: nullable(r.Branch), BaseBranch: nullable(r.BaseBranch),
		Commit: nullable(r.Commit), BaseURL: nullable(r.BaseURL), PullRequest: nonZero(r.PullRequest), ReviewURL: base + "/#/runs/" + r.ID,
		CompareToBaseURL: nullable(r.CompareTo)}
	if r.Comparisons != nil {
		cs := newComparisonViews(r.Comparisons, base)
		out.Comparisons = &cs
		ns := make([]notificationView, len(r.Notifications))
		for i, n := range r.Notifications {
			ns[i] = notificationView{ID: n.ID, Channel: n.ChannelID, Kind: n.Kind, Reason: n.Reason, Status: n.Status,
				Attempts: n.Attempts, LastError: n.LastError, CreatedAt: n.CreatedAt, UpdatedAt: n.UpdatedAt, DeliveredAt: n.DeliveredAt}
		}
		out.Notifications = &ns
	}
	return out
}

func newComparisonViews(list []*regression.Comparison, base string) []comparisonView {
	out := make([]comparisonView, len(list))
	for i, cmp := range list {
		out[i] = newComparisonView(cmp, base)
	}
	return out
}

func nonNilHunks(hs []regression.Hunk) []regression.Hunk {
	if hs == nil {
		return []regression.Hunk{}
	}
	return hs
}

type runList struct {
	Runs       []runView `json:"runs"`
	NextCursor *string   `json:"next_cursor"`
}

type baselineView struct {
	ID           string    `json:"id"`
	SuiteID      string    `json:"suite_id"`
	Target       string    `json:"target"`
	Viewport     string    `json:"viewport"`
	Segment      int       `json:"segment"`
	Version      int       `json:"version"`
	ArtifactID   *string   `json:"artifact_id"` // null: this version removed the segment
	URL          *string   `json:"url"`
	RunID        *string   `json:"run_id"`
	RestoredFrom *string   `json:"restored_from"`
	ApprovedBy   string    `json:"approved_by"`
	ApprovedAt   time.Time `json:"approved_at"`
	Active       bool      `json:"active"`
	// Branch is null for the suite's main branch.
	Branch *string `json:"branch"`
	// Checkpoint is the screenshot action's name, "" for the final screenshot.
	Checkpoint string `json:"checkpoint"`
}

func newBaselineView(b *regression.Baseline, base string) baselineView {
	out := baselineView{ID: b.ID, SuiteID: b.SuiteID, Target: b.Target, Viewport: b.Viewport,
		Segment: b.Segment, Version: b.Version, RunID: nullable(b.RunID), RestoredFrom: nullable(b.RestoredFrom),
		ApprovedBy: b.ApprovedBy, ApprovedAt: b.ApprovedAt, Active: b.Active, Branch: nullable(b.Branch), Checkpoint: b.Checkpoint}
	if b.Artifact != nil {
		id, url := b.Artifact.ID, base+"/v1/artifacts/"+b.Artifact.ID
		out.ArtifactID, out.URL = &id, &url
	}
	return out
}

type baselineList struct {
	Baselines []baselineView `json:"baselines"`
}

// nullable is nil (JSON null) for "".
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// nonZero is n, or nil for 0.
func nonZero(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

// positive is v, or nil for 0.
func positive(v float64) *float64 {
	if v <= 0 {
		return nil
	}
	return &v
}

// nonNilTargets is a suite's static targets, [] for a suite that only discovers them.
func nonNilTargets(ts []regression.SuiteTarget) []regression.SuiteTarget {
	if ts == nil {
		return []regression.SuiteTarget{}
	}
	return ts
}
