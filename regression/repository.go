package regression

import (
	"context"
	"time"

	"github.com/snapq/snapq/jobs"
)

// The interfaces regression consumes, each with the methods its consumer
// calls; store.Store implements them all (compile-time guards in store).

// SuiteStore is what Service (and the scheduled SuiteRunner) needs.
type SuiteStore interface {
	// CreateSuite writes a new suite, unless its owner already holds
	// maxPerOwner suites (counted under a lock held per owner until the
	// write commits): then the error wraps ErrTooManySuites and nothing is
	// written. No cap when maxPerOwner <= 0 or the suite has no owner.
	CreateSuite(ctx context.Context, s *Suite, maxPerOwner int) error
	// GetSuite returns a suite with its newest run (LastRun).
	GetSuite(ctx context.Context, id string) (*Suite, error)
	// UpdateSuite replaces a suite's name, spec, schedule, enabled flag and webhook.
	UpdateSuite(ctx context.Context, s *Suite) error
	// CreateRun writes the run's batch, its jobs, the run and its capture rows
	// in one transaction. A scheduled run whose activation already has a run is
	// ErrRunExists and writes nothing. The jobs count against the batch
	// owner's maxInFlight as jobs.InFlightLimiter's do (counted under the same
	// per-owner lock): over it, the error wraps jobs.ErrTooManyInFlight and
	// nothing is written.
	CreateRun(ctx context.Context, r *Run, b *jobs.Batch, jobs []*jobs.Job, keys []CaptureKey, maxInFlight int) error
}

// Schedules is what ScheduleProvider needs.
type Schedules interface {
	// ScheduledSuites lists enabled suites that have a schedule, except those
	// whose owner key is revoked.
	ScheduledSuites(ctx context.Context) ([]*Suite, error)
}

// Captures finds the run a capture job belongs to (the after-final hook, the
// comparer).
type Captures interface {
	// CaptureOf returns the run (without its counts) and key of a run's capture
	// job; ErrNotFound when the job is not part of a run.
	CaptureOf(ctx context.Context, jobID string) (*Run, CaptureKey, error)
}

// CompareStore is what Comparer needs.
type CompareStore interface {
	Captures
	GetJob(ctx context.Context, id string) (*jobs.Job, error)
	ListArtifacts(ctx context.Context, jobID string) ([]*jobs.Artifact, error)
	// ActiveBaselines returns the active baselines of a suite's target and
	// viewport, by segment; removed segments are left out. Each segment's
	// comes from the first of branches (baseline branch keys, as
	// Run.BaselineBranches) that has a version of it.
	ActiveBaselines(ctx context.Context, suiteID string, branches []string, key CaptureKey) ([]*Baseline, error)
	// BaselineVersions returns every version with an image of a suite's
	// target and viewport on branches (baseline branch keys), the first
	// branch's first, each branch's newest first (approval memory).
	BaselineVersions(ctx context.Context, suiteID string, branches []string, key CaptureKey) ([]*Baseline, error)
	// RecordComparisons replaces the comparisons of one capture job, adds its
	// diff artifacts, marks the capture compared and, when it was the run's
	// last, settles the run's status (and its run.completed webhook delivery).
	// finished reports that this call settled the run.
	RecordComparisons(ctx context.Context, runID, jobID string, cs []*Comparison, diffs []*jobs.Artifact) (finished bool, err error)
}

// Uncompared is what the reconcile step needs: it finds the captures left
// uncompared and records an error comparison for one the queue gave up on.
type Uncompared interface {
	Captures
	// UncomparedCaptures lists capture jobs that are final but not compared,
	// finished before before.
	UncomparedCaptures(ctx context.Context, before time.Time, limit int) ([]string, error)
	// RecordComparisons is CompareStore's.
	RecordComparisons(ctx context.Context, runID, jobID string, cs []*Comparison, diffs []*jobs.Artifact) (finished bool, err error)
}

// RunsOfBatches finds the run of a batch (the run.completed webhook event).
type RunsOfBatches interface {
	// RunOfBatch returns the run a batch belongs to, or ErrNotFound.
	RunOfBatch(ctx context.Context, batchID string) (*Run, error)
}

// Reader is what the API reads and changes of suites, runs and baselines
// besides Service: the web package's view of the store.
type Reader interface {
	GetSuite(ctx context.Context, id string) (*Suite, error)
	// ListSuites returns suites newest first; owner as in listing batches.
	ListSuites(ctx context.Context, owner string, limit int, cursor string) ([]*Suite, string, error)
	DeleteSuite(ctx context.Context, id string) error
	// GetRun returns a run with its counts and comparisons.
	GetRun(ctx context.Context, id string) (*Run, error)
	// GetRunSummary returns a run with its counts, without comparisons or
	// notifications.
	GetRunSummary(ctx context.Context, id string) (*Run, error)
	// ListComparisons returns one page of a run's comparisons (GetRun's
	// order) matching f, after the comparison whose id is cursor, and the
	// next page's cursor ("" after the last). A cursor that is not one of the
	// run's comparisons is a *jobs.ValidationError.
	ListComparisons(ctx context.Context, runID string, f ComparisonFilter, limit int, cursor string) ([]*Comparison, string, error)
	ListRuns(ctx context.Context, suiteID string, limit int, cursor string) ([]*Run, string, error)
	// Approve promotes the selected comparisons' captures to new baseline
	// versions in one transaction and returns the run afterwards, without
	// its comparisons (GetRunSummary's).
	Approve(ctx context.Context, runID string, a Approval, by string) (*Run, error)
	// Reject marks the selected comparisons (of ids, those failed, new or
	// missing, neither approved nor rejected) rejected by by; they stay
	// failed. It returns how many it marked.
	Reject(ctx context.Context, runID string, ids []string, by string) (int, error)
	// ListBaselines returns a suite's active baselines of one branch key, or
	// every version with history.
	ListBaselines(ctx context.Context, suiteID, branch string, history bool) ([]*Baseline, error)
	GetBaseline(ctx context.Context, id string) (*Baseline, error)
	// RestoreBaseline adds a new active version holding an older version's image.
	RestoreBaseline(ctx context.Context, id, by string) (*Baseline, error)
	// MergeBranch promotes the active baselines of branch (a baseline branch
	// key, not MainLine) to new versions of base's and removes the branch's;
	// it returns how many were promoted.
	MergeBranch(ctx context.Context, suiteID, branch, base, by string) (int, error)
	// TargetHistory returns how each target came out of the suite's newest
	// runs finished runs on a branch key, each target's runs newest first.
	TargetHistory(ctx context.Context, suiteID, branch string, runs int) (map[string][]TargetRun, error)
}
