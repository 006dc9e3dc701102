package regression

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/snapq/snapq/jobs"
)

// A run of a suite and what it leaves: its captures, its comparisons with
// the baselines, and the approvals that promote them.

// RunStatus is where a run is, or how it ended. Its values are part of the public API
// (JSON) and stored as they are (SQL).
type RunStatus string

// Run statuses.
const (
	RunRunning     RunStatus = "running"
	RunPassed      RunStatus = "passed"
	RunFailed      RunStatus = "failed"
	RunNeedsReview RunStatus = "needs_review"
	RunError       RunStatus = "error"
	RunApproved    RunStatus = "approved"
)

// CompareStatus is how a comparison ended. Its values are part of the public API (JSON)
// and stored as they are (SQL).
type CompareStatus string

// Comparison statuses.
const (
	ComparePassed  CompareStatus = "passed"
	CompareFailed  CompareStatus = "failed"
	CompareNew     CompareStatus = "new"
	CompareMissing CompareStatus = "missing"
	CompareError   CompareStatus = "error"
)

// Run triggers.
const (
	TriggerManual   = "manual"
	TriggerSchedule = "schedule"
)

// EventRunCompleted is the webhook event of a finished run.
const EventRunCompleted = "run.completed"

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
	Status       RunStatus
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
	Status     RunStatus  `json:"status"`
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
	Status     CompareStatus
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
	// MaskedRegions are the learned-volatile regions whose changes the
	// comparison masked (volatilitymask.go); nil: none.
	MaskedRegions []MaskedRegion

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
	Statuses []CompareStatus `json:"status"`
}

// ComparisonFilter picks a run's comparisons in a list: Statuses (none: any)
// and, when set, whether they are approved.
type ComparisonFilter struct {
	Statuses []CompareStatus
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
