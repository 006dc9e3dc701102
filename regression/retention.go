package regression

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/maintenance"
)

// MaxKeepRuns bounds a suite's retention.keep_runs.
const MaxKeepRuns = 100000

// Retention is how long a suite's runs are kept (maintenance/retention.go): runs
// older than Days (their batches, captures, comparisons and objects) and
// runs beyond the newest KeepRuns are deleted, except the images any
// baseline names. Nil fields: the suite sets no limit of that kind (Days
// falls back to the owner key's, then SNAPQ_RETENTION_DAYS); 0 Days keeps
// runs forever whatever the key says.
type Retention struct {
	Days     *int `json:"days,omitempty"`
	KeepRuns *int `json:"keep_runs,omitempty"`
}

// validateRetention checks a suite's retention; nil stays nil.
func validateRetention(in *Retention, errs *jobs.FieldErrors) *Retention {
	if in == nil {
		return nil
	}
	if in.Days == nil && in.KeepRuns == nil {
		errs.Add("invalid_option", "retention", `give "days", "keep_runs" or both, or leave retention out`)
		return nil
	}
	if in.Days != nil && (*in.Days < 0 || *in.Days > maintenance.MaxRetentionDays) {
		errs.Add("invalid_option", "retention.days", fmt.Sprintf("must be 0 (keep forever) to %d days", maintenance.MaxRetentionDays))
	}
	if in.KeepRuns != nil && (*in.KeepRuns < 1 || *in.KeepRuns > MaxKeepRuns) {
		errs.Add("invalid_option", "retention.keep_runs", fmt.Sprintf("must be 1-%d runs (leave it out to keep any number)", MaxKeepRuns))
	}
	out := *in
	return &out
}

// DefaultBranchBaselineDays is SNAPQ_BRANCH_BASELINE_DAYS's default.
const DefaultBranchBaselineDays = 30

// Branch baselines expire: a branch's baselines (every version; its
// baseline key is not MainLine) are deleted once the branch has had no run
// and no approval for the suite's branch_baseline_days, else the default
// (SNAPQ_BRANCH_BASELINE_DAYS); 0 keeps them until merged. The main
// branch's baselines never expire. Deleting a baseline row deletes no
// object: its image stays while its run's batch is kept, and goes with the
// batch under the retention rules (an object goes only when no row names
// it).

// StaleBranch is a suite's branch that has baselines, with its last
// activity: the newest of its runs and of its baselines' approvals.
type StaleBranch struct {
	SuiteID      string
	Branch       string
	LastActivity time.Time
	// SuiteDays is the suite's branch_baseline_days; nil: the default.
	SuiteDays *int
}

// Days is the expiry age that applies under the default def (0: never).
func (b StaleBranch) Days(def int) int {
	if b.SuiteDays != nil {
		return *b.SuiteDays
	}
	return def
}

// Expired tells whether the branch's baselines expire at now.
func (b StaleBranch) Expired(def int, now time.Time) bool {
	days := b.Days(def)
	return b.Branch != MainLine && days > 0 && !b.LastActivity.After(now.Add(-time.Duration(days)*24*time.Hour))
}

// BranchBaselineStore is what BranchExpiry asks the database.
type BranchBaselineStore interface {
	// StaleBranches returns at most limit suite branches with baselines
	// whose last activity is before now minus their days (a superset of
	// what expires; days <= 0 are left out).
	StaleBranches(ctx context.Context, now time.Time, defaultDays, limit int) ([]StaleBranch, error)
	// DeleteBranchBaselines deletes every baseline of the suite's branch in
	// one transaction, under the suite's lock, unless the branch had a run
	// or an approval after notAfter by then (0, nil: nothing deleted);
	// dryRun rolls back. It returns how many rows went (or would).
	DeleteBranchBaselines(ctx context.Context, suiteID, branch string, notAfter time.Time, dryRun bool) (int, error)
}

// BranchExpiry implements maintenance.BaselineExpirer.
type BranchExpiry struct {
	Repo BranchBaselineStore
	Now  func() time.Time
	// MaxBranches bounds the branches one pass expires (default 1000).
	MaxBranches int
}

var _ maintenance.BaselineExpirer = (*BranchExpiry)(nil)

// ExpireBaselines implements maintenance.BaselineExpirer.
func (e *BranchExpiry) ExpireBaselines(ctx context.Context, defaultDays int, dryRun bool) (maintenance.BaselineExpiryReport, error) {
	rep := maintenance.BaselineExpiryReport{Expired: []maintenance.ExpiredBranch{}}
	now := time.Now()
	if e.Now != nil {
		now = e.Now()
	}
	limit := e.MaxBranches
	if limit <= 0 {
		limit = 1000
	}
	cands, err := e.Repo.StaleBranches(ctx, now, defaultDays, limit)
	if err != nil {
		return rep, err
	}
	var errs []error
	for _, b := range cands {
		if !b.Expired(defaultDays, now) {
			continue
		}
		days := b.Days(defaultDays)
		n, err := e.Repo.DeleteBranchBaselines(ctx, b.SuiteID, b.Branch, now.Add(-time.Duration(days)*24*time.Hour), dryRun)
		if err != nil {
			errs = append(errs, fmt.Errorf("expire baselines of branch %q of suite %s: %w", b.Branch, b.SuiteID, err))
			continue
		}
		if n == 0 {
			continue // active again since it was selected
		}
		rep.Branches++
		rep.Baselines += n
		rep.Expired = append(rep.Expired, maintenance.ExpiredBranch{SuiteID: b.SuiteID, Branch: b.Branch,
			LastActivity: b.LastActivity, Days: days, Baselines: n})
	}
	return rep, errors.Join(errs...)
}
