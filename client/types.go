package client

import (
	"encoding/json"
	"time"
)

// Job statuses.
const (
	JobQueued    = "queued"
	JobRunning   = "running"
	JobSucceeded = "succeeded"
	JobFailed    = "failed"
	JobCanceled  = "canceled"
)

// Batch statuses (derived from the job counts).
const (
	BatchQueued    = "queued"
	BatchRunning   = "running"
	BatchCompleted = "completed"
)

// Run statuses; every one but RunRunning is final.
const (
	RunRunning     = "running"
	RunPassed      = "passed"
	RunFailed      = "failed"
	RunNeedsReview = "needs_review"
	RunError       = "error"
	RunApproved    = "approved"
)

// Counts is the number of a batch's jobs in each status.
type Counts struct {
	Queued    int `json:"queued"`
	Running   int `json:"running"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Canceled  int `json:"canceled"`
}

// Done is the number of jobs in a final status.
func (c Counts) Done() int { return c.Succeeded + c.Failed + c.Canceled }

// Total is the number of jobs counted.
func (c Counts) Total() int { return c.Queued + c.Running + c.Done() }

// Batch is a batch as GET /v1/batches/:id shows it.
type Batch struct {
	ID         string            `json:"id"`
	Status     string            `json:"status"`
	Total      int               `json:"total"`
	Counts     Counts            `json:"counts"`
	Labels     map[string]string `json:"labels"`
	CreatedAt  time.Time         `json:"created_at"`
	FinishedAt *time.Time        `json:"finished_at"`
	// Crawl is a crawl batch's settings and skipped pages (nil for other batches); Total
	// grows as its pages add jobs.
	Crawl *BatchCrawl `json:"crawl,omitempty"`
}

// BatchCrawl is a crawl batch's settings, as validated, and Skipped: the pages (each URL
// once) its pages linked to that were not added because the batch had max_pages jobs or
// its owner was at the in-flight cap.
type BatchCrawl struct {
	Crawl
	Skipped int `json:"skipped"`
}

// Completed reports whether every job of the batch reached a final status.
func (b *Batch) Completed() bool { return b.Status == BatchCompleted }

// CreatedBatch answers CreateBatch: the batch and a summary of its jobs in
// submission order.
type CreatedBatch struct {
	Batch
	Jobs []JobSummary `json:"jobs"`
	// Replayed is true when the api answered an Idempotency-Key it had seen
	// with the batch it created then.
	Replayed bool `json:"-"`
}

// JobSummary is a job as CreateBatch lists it.
type JobSummary struct {
	ID     string `json:"id"`
	URL    string `json:"url"`
	Name   string `json:"name"`
	Status string `json:"status"`
}

// JobError is why a job failed: a stable code and a message.
type JobError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Job is a job as GET /v1/jobs/:id and GET /v1/batches/:id/jobs show it.
type Job struct {
	ID       string    `json:"id"`
	BatchID  string    `json:"batch_id"`
	URL      string    `json:"url"`
	Name     string    `json:"name"`
	Status   string    `json:"status"`
	Attempts int       `json:"attempts"`
	Error    *JobError `json:"error"`
	Result   *Result   `json:"result"`
	// Options are the job's resolved capture options (every field set), as
	// the api reports them.
	Options    json.RawMessage `json:"options"`
	CreatedAt  time.Time       `json:"created_at"`
	StartedAt  *time.Time      `json:"started_at"`
	FinishedAt *time.Time      `json:"finished_at"`
	// Crawl is a crawl batch's job's place in the crawl; nil for other jobs.
	Crawl *CrawlPosition `json:"crawl,omitempty"`
	// Preview is the job's first screenshot; only in ListJobs.
	Preview *ImageRef `json:"preview,omitempty"`
	// Artifacts are the job's stored outputs; only in GetJob.
	Artifacts []Artifact `json:"artifacts,omitempty"`
}

// CrawlPosition is a crawl job's depth (0: the start page) and the job and page whose
// link added it (empty for the start page).
type CrawlPosition struct {
	Depth    int    `json:"depth"`
	ParentID string `json:"parent_id,omitempty"`
	FoundOn  string `json:"found_on,omitempty"`
}

// Terminal reports whether the job reached a final status.
func (j *Job) Terminal() bool {
	return j.Status == JobSucceeded || j.Status == JobFailed || j.Status == JobCanceled
}

// Result is what a capture reported.
type Result struct {
	HTTPStatus        int              `json:"http_status"`
	FinalURL          string           `json:"final_url"`
	Title             string           `json:"title"`
	PageHeight        int              `json:"page_height"`
	Segments          SegmentCounts    `json:"segments"`
	BlockedRequests   int              `json:"blocked_requests"`
	Blocking          *Blocking        `json:"blocking,omitempty"`
	WaitErrors        []string         `json:"wait_errors,omitempty"`
	TextChars         int              `json:"text_chars,omitempty"`
	MarkdownChars     int              `json:"markdown_chars,omitempty"`
	MarkdownTruncated bool             `json:"markdown_truncated,omitempty"`
	TimingsMS         map[string]int64 `json:"timings_ms"`
	Log               []LogEntry       `json:"log,omitempty"`
	LogTruncated      bool             `json:"log_truncated,omitempty"`
	Evaluations       []Evaluation     `json:"evaluations,omitempty"`
	Stabilization     *Stabilization   `json:"stabilization,omitempty"`
	Masks             []Box            `json:"masks,omitempty"`
	Partial           bool             `json:"partial,omitempty"`
	ContentType       string           `json:"content_type,omitempty"`
	PDFPages          int              `json:"pdf_pages,omitempty"`
	SkippedOutputs    []SkippedOutput  `json:"skipped_outputs,omitempty"`
	// CachedFrom is the job whose capture this one reused (options.max_age_s).
	CachedFrom string         `json:"cached_from,omitempty"`
	Quality    *Quality       `json:"quality,omitempty"`
	Consent    []ConsentFound `json:"consent,omitempty"`
}

// Quality is the verdict on how far a capture can be trusted: ok, or suspect
// with reasons (blank, loading_indicator, failed_images, failed_fonts,
// challenge, console_errors).
type Quality struct {
	Verdict       string   `json:"verdict"`
	Reasons       []string `json:"reasons,omitempty"`
	ConsoleErrors int      `json:"console_errors"`
	Retried       bool     `json:"retried,omitempty"`
}

// ConsentFound is one consent banner prepare.consent found and what it did
// ("accepted", "hidden").
type ConsentFound struct {
	Platform string `json:"platform"`
	Action   string `json:"action"`
}

// SegmentCounts says how many pieces a page needed and how many were kept.
type SegmentCounts struct {
	Total     int  `json:"total"`
	Captured  int  `json:"captured"`
	Truncated bool `json:"truncated"`
}

// LogEntry is one step performed on the page.
type LogEntry struct {
	Index   int    `json:"index"`
	Type    string `json:"type"`
	Target  string `json:"target"`
	OK      bool   `json:"ok"`
	MS      int64  `json:"ms"`
	Error   string `json:"error,omitempty"`
	Excerpt string `json:"excerpt,omitempty"`
}

// Evaluation is the value of an evaluate action.
type Evaluation struct {
	Index     int             `json:"index"`
	Value     json.RawMessage `json:"value"`
	Truncated bool            `json:"truncated,omitempty"`
}

// Stabilization says how many captures a regression capture took to settle.
type Stabilization struct {
	Captures int  `json:"captures"`
	Stable   bool `json:"stable"`
}

// Box is a rectangle in page pixels.
type Box struct {
	X      int `json:"x"`
	Y      int `json:"y"`
	Width  int `json:"width"`
	Height int `json:"height"`
}

// SkippedOutput is an asked-for output the target cannot give, with why.
type SkippedOutput struct {
	Output string `json:"output"`
	Reason string `json:"reason"`
}

// Artifact is one stored output of a job. URL is the api's download address
// (GET /v1/artifacts/:id, a redirect to the object); DownloadArtifact reads it.
type Artifact struct {
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

// ImageRef points at an image artifact: previews, baselines, diffs.
type ImageRef struct {
	ArtifactID string `json:"artifact_id"`
	URL        string `json:"url"`
	Width      int    `json:"width"`
	Height     int    `json:"height"`
	// Thumbnail is the image's small preview, when it has one.
	Thumbnail *Thumbnail `json:"thumbnail,omitempty"`
}

// Thumbnail is an image's small preview.
type Thumbnail struct {
	URL    string `json:"url"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Bytes  int64  `json:"bytes"`
}

// Webhooks answers BatchWebhooks: the batch's webhook URL (never its
// secret; nil without one) and every delivery so far.
type Webhooks struct {
	Webhook    *WebhookRef `json:"webhook"`
	Deliveries []Delivery  `json:"deliveries"`
}

// WebhookRef shows a webhook's URL.
type WebhookRef struct {
	URL string `json:"url"`
}

// Delivery is one webhook event's delivery and its outcome so far.
type Delivery struct {
	ID          string     `json:"id"`
	Event       string     `json:"event"`
	Status      string     `json:"status"`
	Attempts    int        `json:"attempts"`
	LastStatus  *int       `json:"last_status"`
	LastError   *string    `json:"last_error"`
	CreatedAt   time.Time  `json:"created_at"`
	DeliveredAt *time.Time `json:"delivered_at"`
}

// Suite is a visual-regression suite.
type Suite struct {
	ID             string        `json:"id"`
	Name           string        `json:"name"`
	Targets        []SuiteTarget `json:"targets"`
	Options        *Options      `json:"options"`
	Schedule       *Schedule     `json:"schedule"`
	Threshold      float64       `json:"threshold"`
	PixelThreshold float64       `json:"pixel_threshold"`
	Ignore         Ignore        `json:"ignore"`
	MainBranch     string        `json:"main_branch"`
	// VCS is the suite's code host, without its token; Notify its channels,
	// without their urls and secrets.
	VCS    *VCS      `json:"vcs"`
	Notify []Channel `json:"notify"`
	// Preset is the sensitivity preset (nil: none); AutoApproveBelow and
	// FailAbove the triage bands (nil: none).
	Preset           *string  `json:"preset"`
	IncludeAA        bool     `json:"include_aa"`
	AutoApproveBelow *float64 `json:"auto_approve_below"`
	FailAbove        *float64 `json:"fail_above"`
	// BranchBaselineDays is how long a branch's baselines outlive its last
	// run or approval; nil: the api's default (SNAPQ_BRANCH_BASELINE_DAYS).
	BranchBaselineDays *int        `json:"branch_baseline_days"`
	Enabled            bool        `json:"enabled"`
	Webhook            *WebhookRef `json:"webhook"`
	CreatedAt          time.Time   `json:"created_at"`
	UpdatedAt          time.Time   `json:"updated_at"`
	LastRun            *RunRef     `json:"last_run"`
	// Discover is the suite's discovery; nil when it lists its targets only.
	Discover *Discover `json:"discover,omitempty"`
	// Volatility is how the suite uses its learned volatile regions
	// (defaults filled in: mode off).
	Volatility VolatilitySettings `json:"volatility"`
}

// VolatilitySettings is a suite's volatility section: Mode is "off" (the
// default), "suggest" or "mask"; MinRuns (default 5) and Threshold (default
// 0.5) say when a region is volatile. Zero fields take the defaults.
type VolatilitySettings struct {
	Mode      string  `json:"mode"`
	MinRuns   int     `json:"min_runs,omitempty"`
	Threshold float64 `json:"threshold,omitempty"`
}

// SuiteTarget is one page of a suite, captured at each of its viewports.
type SuiteTarget struct {
	URL       string     `json:"url"`
	Name      string     `json:"name,omitempty"`
	Options   *Options   `json:"options,omitempty"`
	Viewports []Viewport `json:"viewports,omitempty"`
	// Triage overrides the suite's sensitivity and bands for this target.
	Triage
}

// Triage is a target's sensitivity preset ("strict", "recommended",
// "relaxed"), explicit overrides of it, and triage bands; nil keeps the
// suite's.
type Triage struct {
	Preset           string   `json:"preset,omitempty"`
	Threshold        *float64 `json:"threshold,omitempty"`
	PixelThreshold   *float64 `json:"pixel_threshold,omitempty"`
	IncludeAA        *bool    `json:"include_aa,omitempty"`
	AutoApproveBelow *float64 `json:"auto_approve_below,omitempty"`
	FailAbove        *float64 `json:"fail_above,omitempty"`
}

// Viewport is a viewport size in CSS pixels.
type Viewport struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

// Schedule is a suite's cron schedule.
type Schedule struct {
	Cron     string `json:"cron"`
	Timezone string `json:"timezone,omitempty"`
}

// Ignore lists what comparisons leave out.
type Ignore struct {
	Selectors []string `json:"selectors"`
	Rects     []Box    `json:"rects"`
}

// RunRef is a suite's last run.
type RunRef struct {
	ID         string     `json:"id"`
	Status     string     `json:"status"`
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// SuiteInput is the body of CreateSuite. Optional fields left nil take the
// api's defaults.
type SuiteInput struct {
	Name           string        `json:"name"`
	Targets        []SuiteTarget `json:"targets"`
	Options        *Options      `json:"options,omitempty"`
	Schedule       *Schedule     `json:"schedule,omitempty"`
	Threshold      *float64      `json:"threshold,omitempty"`
	PixelThreshold *float64      `json:"pixel_threshold,omitempty"`
	Ignore         *Ignore       `json:"ignore,omitempty"`
	MainBranch     string        `json:"main_branch,omitempty"`
	// VCS reports runs to a code host (its Token is write-only); Notify
	// lists the channels told when a run ends (their URLs and secrets are
	// write-only). Suites with either need the api's SNAPQ_SECRET_KEY.
	VCS    *VCS      `json:"vcs,omitempty"`
	Notify []Channel `json:"notify,omitempty"`
	// Preset sets threshold, pixel_threshold and include_aa together
	// ("strict", "recommended", "relaxed"); explicit fields override it.
	Preset           string   `json:"preset,omitempty"`
	IncludeAA        *bool    `json:"include_aa,omitempty"`
	AutoApproveBelow *float64 `json:"auto_approve_below,omitempty"`
	FailAbove        *float64 `json:"fail_above,omitempty"`
	// BranchBaselineDays: 0 keeps branch baselines until merged; nil: the
	// api's default.
	BranchBaselineDays *int          `json:"branch_baseline_days,omitempty"`
	Enabled            *bool         `json:"enabled,omitempty"`
	Webhook            *WebhookInput `json:"webhook,omitempty"`
	// Discover, when set, adds a sitemap's pages (or the pages a crawl of the site's
	// HTML links finds) to the targets on every run (Targets may then be empty).
	Discover *Discover `json:"discover,omitempty"`
	// Volatility, when set, turns learned volatility on (mode suggest or mask).
	Volatility *VolatilitySettings `json:"volatility,omitempty"`
}

// Discover is a suite's discovery: the pages of Sitemap (at most Limit, 0: the server's
// default of 50), filtered by Include/Exclude — or, instead of Sitemap, the pages Crawl
// finds — each a target named page-<path>, captured with Options over the suite's.
type Discover struct {
	Sitemap string         `json:"sitemap,omitempty"`
	Crawl   *DiscoverCrawl `json:"crawl,omitempty"`
	Limit   int            `json:"limit,omitempty"`
	Include []string       `json:"include,omitempty"`
	Exclude []string       `json:"exclude,omitempty"`
	Options *Options       `json:"options,omitempty"`
}

// DiscoverCrawl finds a suite's pages on every run by following the <a href> links of
// the site's HTML from URL, breadth first, MaxDepth levels down (nil: the server's
// default of 2, at most 5; 0 is the start page only), at most MaxPages pages (0: 100),
// links filtered by Include/Exclude, of URL's origin only unless SameOrigin is false.
// No script runs: links added by JavaScript are not seen.
type DiscoverCrawl struct {
	URL        string   `json:"url"`
	MaxDepth   *int     `json:"max_depth,omitempty"`
	MaxPages   int      `json:"max_pages,omitempty"`
	Include    []string `json:"include,omitempty"`
	Exclude    []string `json:"exclude,omitempty"`
	SameOrigin *bool    `json:"same_origin,omitempty"`
}

// RunCounts is the number of a run's comparisons in each status.
type RunCounts struct {
	Total   int `json:"total"`
	Pending int `json:"pending"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	New     int `json:"new"`
	Missing int `json:"missing"`
	Error   int `json:"error"`
	// ToReview counts failed, new and missing comparisons not approved yet.
	ToReview int `json:"to_review"`
}

// Run is one capture of a suite compared with its baselines.
type Run struct {
	ID           string     `json:"id"`
	SuiteID      string     `json:"suite_id"`
	BatchID      string     `json:"batch_id"`
	Trigger      string     `json:"trigger"`
	ScheduledFor *time.Time `json:"scheduled_for"`
	Status       string     `json:"status"`
	Counts       RunCounts  `json:"counts"`
	CreatedAt    time.Time  `json:"created_at"`
	FinishedAt   *time.Time `json:"finished_at"`
	// Branch is nil for a run on the suite's main branch; BaseBranch is
	// what a branch run falls back to.
	Branch     *string `json:"branch"`
	BaseBranch *string `json:"base_branch"`
	Commit     *string `json:"commit"`
	BaseURL    *string `json:"base_url"`
	// CompareToBaseURL is an environment pair run's reference origin (its
	// comparisons' Baseline images are the captures on it); nil otherwise.
	CompareToBaseURL *string `json:"compare_to_base_url"`
	// PullRequest is nil without one.
	PullRequest *int `json:"pull_request"`
	// ReviewURL is the run's page in the dashboard.
	ReviewURL string `json:"review_url"`
	// Comparisons are set by GetRun and ApproveRun, nil in lists.
	Comparisons []Comparison `json:"comparisons,omitempty"`
}

// Finished reports whether the run reached a final status.
func (r *Run) Finished() bool { return r.Status != "" && r.Status != RunRunning }

// Comparison is one segment of one capture compared with its baseline.
type Comparison struct {
	ID         string     `json:"id"`
	JobID      string     `json:"job_id"`
	Target     string     `json:"target"`
	Viewport   string     `json:"viewport"`
	Segment    int        `json:"segment"`
	Status     string     `json:"status"`
	DiffPixels int64      `json:"diff_pixels"`
	DiffRatio  float64    `json:"diff_ratio"`
	Threshold  float64    `json:"threshold"`
	Message    string     `json:"message"`
	Baseline   *ImageRef  `json:"baseline"`
	Current    *ImageRef  `json:"current"`
	Diff       *ImageRef  `json:"diff"`
	Approved   bool       `json:"approved"`
	ApprovedAt *time.Time `json:"approved_at"`
	// GroupKey is the change group the comparison belongs to (nil: no pixel changed).
	GroupKey *string `json:"group_key"`
	// MatchesPrevious names the superseded baseline version the current
	// image is identical to: it passed for it (approval memory).
	MatchesPrevious *PreviousMatch `json:"matches_previous"`
	// AutoApproved: passed below the suite's or target's auto_approve_below.
	AutoApproved bool `json:"auto_approved"`
	// Rejected: a reviewer rejected the change; it stays failed.
	Rejected   bool       `json:"rejected"`
	RejectedAt *time.Time `json:"rejected_at"`
	RejectedBy *string    `json:"rejected_by"`
	// MaskedRegions are the learned-volatile regions whose changes were
	// masked (suite volatility mode mask); empty for none.
	MaskedRegions []MaskedRegion `json:"masked_regions"`
}

// MaskedRegion is a learned-volatile region a comparison masked: the
// element's selector, its box in the segment image, the kinds of the
// changes masked, and what it was learned from.
type MaskedRegion struct {
	Selector    string   `json:"selector"`
	Box         Rect     `json:"box"`
	Kinds       []string `json:"kinds"`
	ChangedRuns int      `json:"changed_runs"`
	Runs        int      `json:"runs"`
	Share       float64  `json:"share"`
}

// PreviousMatch is the baseline version an image is identical to.
type PreviousMatch struct {
	BaselineID string `json:"baseline_id"`
	Version    int    `json:"version"`
}

// Group is the comparisons of a run that show one change.
type Group struct {
	ID             string      `json:"id"`
	Size           int         `json:"size"`
	Counts         GroupCounts `json:"counts"`
	NeedsReview    int         `json:"needs_review"`
	Representative Comparison  `json:"representative"`
	Comparisons    []string    `json:"comparisons"`
	Targets        []string    `json:"targets"`
	Viewports      []string    `json:"viewports"`
}

// GroupCounts counts a group's members by status, and those approved or rejected.
type GroupCounts struct {
	Passed   int `json:"passed"`
	Failed   int `json:"failed"`
	New      int `json:"new"`
	Missing  int `json:"missing"`
	Error    int `json:"error"`
	Approved int `json:"approved"`
	Rejected int `json:"rejected"`
}

// GroupResult answers ApproveGroup and RejectGroup.
type GroupResult struct {
	Group     Group     `json:"group"`
	Approved  int       `json:"approved"`
	Rejected  int       `json:"rejected"`
	RunStatus string    `json:"run_status"`
	Counts    RunCounts `json:"counts"`
}

// Approval selects what ApproveRun promotes to baselines: exactly one of
// All, Targets (target names) or Comparisons (comparison ids).
type Approval struct {
	All         bool     `json:"all,omitempty"`
	Targets     []string `json:"targets,omitempty"`
	Comparisons []string `json:"comparisons,omitempty"`
	// Status approves every comparison in one of these statuses (failed,
	// new, missing).
	Status []string `json:"status,omitempty"`
}

// Baseline is one version of the approved image of a target, viewport and
// segment.
type Baseline struct {
	ID           string    `json:"id"`
	SuiteID      string    `json:"suite_id"`
	Target       string    `json:"target"`
	Viewport     string    `json:"viewport"`
	Segment      int       `json:"segment"`
	Version      int       `json:"version"`
	ArtifactID   *string   `json:"artifact_id"` // nil: this version removed the segment
	URL          *string   `json:"url"`
	RunID        *string   `json:"run_id"`
	RestoredFrom *string   `json:"restored_from"`
	ApprovedBy   string    `json:"approved_by"`
	ApprovedAt   time.Time `json:"approved_at"`
	Active       bool      `json:"active"`
	Branch       *string   `json:"branch"` // nil: the suite's main branch
}

// RunOptions put a run on a branch of the code under test: it compares
// against the branch's approved baselines where they exist, else the base
// branch's (default: the suite's main branch). BaseURL replaces every
// target's origin (a deploy preview). All are optional.
type RunOptions struct {
	Branch     string `json:"branch,omitempty"`
	BaseBranch string `json:"base_branch,omitempty"`
	Commit     string `json:"commit,omitempty"`
	BaseURL    string `json:"base_url,omitempty"`
	// PullRequest is the pull request (GitHub) or merge request iid
	// (GitLab) whose snapq comment the run edits (the suite needs a vcs).
	PullRequest int `json:"pull_request,omitempty"`
	// CompareToBaseURL makes the run an environment pair: every target is
	// also captured on this origin, at the same time, and the two captures
	// are diffed with each other instead of with baselines (staging vs
	// production). Such a run cannot be approved (409
	// pair_run_not_approvable).
	CompareToBaseURL string `json:"compare_to_base_url,omitempty"`
}

// MergeResult is what MergeBranch promoted.
type MergeResult struct {
	Branch     string `json:"branch"`
	BaseBranch string `json:"base_branch"`
	Promoted   int    `json:"promoted"`
}

// KeyInfo is the calling API key as GET /v1/key shows it (never its secret).
type KeyInfo struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	Prefix       string    `json:"prefix"`
	CreatedAt    time.Time `json:"created_at"`
	Limits       KeyLimits `json:"limits"`
	InFlightJobs int       `json:"in_flight_jobs"`
}

// KeyLimits are the limits the api applies to a key. Extra holds every
// limit, including those this version of the client has no field for.
type KeyLimits struct {
	RatePerSecond   float64        `json:"rate_per_second"`
	Burst           int            `json:"burst"`
	MaxInFlightJobs int            `json:"max_in_flight_jobs"`
	Extra           map[string]any `json:"-"`
}

// UnmarshalJSON keeps every limit in Extra besides the known fields.
func (l *KeyLimits) UnmarshalJSON(b []byte) error {
	type plain KeyLimits
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	if err := json.Unmarshal(b, &p.Extra); err != nil {
		return err
	}
	*l = KeyLimits(p)
	return nil
}

// Flakiness answers SuiteFlakiness: targets flakiest first.
type Flakiness struct {
	SuiteID string `json:"suite_id"`
	// Branch is nil for the suite's main branch.
	Branch  *string           `json:"branch"`
	Runs    int               `json:"runs"`
	Targets []TargetFlakiness `json:"targets"`
}

// TargetFlakiness is one target's history (newest first) and flake score:
// flips (passed to not passed or back, the older run not approved) over
// the transitions, 0 steady to 1 changing on every run.
type TargetFlakiness struct {
	Target     string      `json:"target"`
	FlakeScore float64     `json:"flake_score"`
	Flips      int         `json:"flips"`
	History    []TargetRun `json:"history"`
}

// TargetRun is how a target came out of one run: its comparisons' worst
// status and largest diff ratio, and whether every one that did not pass
// was approved.
type TargetRun struct {
	RunID        string    `json:"run_id"`
	CreatedAt    time.Time `json:"created_at"`
	Status       string    `json:"status"`
	MaxDiffRatio float64   `json:"max_diff_ratio"`
	Approved     bool      `json:"approved"`
}

// VCS is a suite's code host: commit statuses or check runs and one
// pull-request comment per run (docs/api/ci.md "CI statuses").
type VCS struct {
	// Provider is "github" or "gitlab".
	Provider string `json:"provider"`
	// APIURL is the API's base URL ("": https://api.github.com or
	// https://gitlab.com/api/v4).
	APIURL string `json:"api_url,omitempty"`
	// Repo is "owner/name" on GitHub, the project id or path on GitLab.
	Repo string `json:"repo"`
	// Token is write-only: never returned.
	Token string `json:"token,omitempty"`
	// Context names the status ("": snapq).
	Context string `json:"context,omitempty"`
	// GitHubMode is "status" (default) or "check" (a check run).
	GitHubMode string `json:"github_mode,omitempty"`
}

// Channel is one of a suite's notification channels (docs/api/notifications.md).
type Channel struct {
	// ID is given by the server; a PATCH listing a channel by id without its
	// URL keeps its secrets.
	ID string `json:"id,omitempty"`
	// Kind is slack, discord, teams, email or webhook.
	Kind string `json:"kind"`
	// URL and Secret are write-only.
	URL    string `json:"url,omitempty"`
	Secret string `json:"secret,omitempty"`
	// To lists an email channel's recipients; each must be in a domain the
	// server's operator allows (SNAPQ_SMTP_ALLOWED_DOMAINS).
	To []string `json:"to,omitempty"`
	// On filters by reason (failed, needs_review, error, recovered; empty:
	// all); MinRatio skips failed runs whose largest change is smaller.
	On       []string `json:"on,omitempty"`
	MinRatio float64  `json:"min_ratio,omitempty"`
	// Repeat announces every failing run, also one after a failing run of
	// the same suite and branch; by default only transitions are announced
	// (passing to failing, failing to passing).
	Repeat bool `json:"repeat,omitempty"`
}

// Blocking counts what the filter lists blocked (block.ads, block.trackers,
// block.chat_widgets, block.social, block.cookie_banners), by category:
// requests failed and elements hidden.
type Blocking struct {
	Requests map[string]int `json:"requests"`
	Elements map[string]int `json:"elements"`
}
