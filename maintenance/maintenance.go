package maintenance

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// Maintenance is the runner of the maintenance services: one pass runs, in
// this order, the expiry of baselines that expire (branch baselines, wired
// in from regression), retention, the orphan sweep and the check for rows
// whose object is missing. Each service is its own value, with its own
// state and report; the runner only sequences them, makes one pass at a
// time and gathers one report. A pass runs as a periodic task (one replica
// per interval, see SweepTask) or on demand (POST /v1/admin/sweep).
type Maintenance struct {
	// Baselines expires branch baselines (regression.BranchExpiry); nil:
	// none expire. It runs first, so images only an expired baseline named
	// are no longer protected when retention decides.
	Baselines BaselineExpirer
	// BranchBaselineDays is the expiry age of branch baselines whose suite
	// sets none (SNAPQ_BRANCH_BASELINE_DAYS; 0: never).
	BranchBaselineDays int
	Retention          *Retention    // nil: no retention
	Sweeper            *Sweeper      // nil: no orphan sweep
	Missing            *MissingCheck // nil: no check for missing objects
	Logger             *slog.Logger
	// Observe, when set, sees every report (metrics).
	Observe func(SweepReport)
	// ForceDryRun makes every pass a dry run whatever its caller asks
	// (SNAPQ_SWEEP_DRY_RUN on the api).
	ForceDryRun bool

	running sync.Mutex // one pass at a time
}

// SweepReport is one maintenance pass.
type SweepReport struct {
	DryRun     bool      `json:"dry_run"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	// BranchBaselines is the expiry of branch baselines, before retention.
	BranchBaselines BaselineExpiryReport `json:"branch_baselines"`
	Retention       RetentionReport      `json:"retention"`
	Orphans         SweepResult          `json:"orphans"`
	Missing         MissingReport        `json:"missing"`
	// Errors are the pass's failures; what did not fail is still reported.
	Errors []string `json:"errors"`
}

// BaselineExpirer deletes baselines whose branch has been idle past its
// age (regression.BranchExpiry). Deleting a baseline deletes no object: it
// only stops protecting its image, which goes with its batch under the
// retention rules (objects go only when no row names them).
type BaselineExpirer interface {
	// ExpireBaselines runs one expiry with defaultDays for suites that set
	// none (0: never); dryRun deletes nothing and reports what would go.
	ExpireBaselines(ctx context.Context, defaultDays int, dryRun bool) (BaselineExpiryReport, error)
}

// BaselineExpiryReport is what one expiry of branch baselines did.
type BaselineExpiryReport struct {
	// Branches and Baselines count the branches expired and their baseline
	// rows (every version) deleted, or that would be in a dry run.
	Branches  int             `json:"branches"`
	Baselines int             `json:"baselines"`
	Expired   []ExpiredBranch `json:"expired"`
}

// ExpiredBranch is one suite's branch whose baselines expired.
type ExpiredBranch struct {
	SuiteID string `json:"suite_id"`
	Branch  string `json:"branch"`
	// LastActivity is the branch's newest run or approval.
	LastActivity time.Time `json:"last_activity"`
	Days         int       `json:"days"`
	Baselines    int       `json:"baselines"`
}

// ErrPassRunning: Pass was called while a pass of the same Maintenance runs.
var ErrPassRunning = errors.New("a maintenance pass is already running")

// Pass runs one pass; dryRun deletes nothing and reports what would go.
func (m *Maintenance) Pass(ctx context.Context, dryRun bool) (SweepReport, error) {
	if !m.running.TryLock() {
		return SweepReport{}, ErrPassRunning
	}
	defer m.running.Unlock()
	dryRun = dryRun || m.ForceDryRun
	rep := SweepReport{DryRun: dryRun, StartedAt: time.Now().UTC(), Errors: []string{},
		Retention:       RetentionReport{Expired: []Expiry{}, Keys: []string{}},
		BranchBaselines: BaselineExpiryReport{Expired: []ExpiredBranch{}},
		Orphans:         SweepResult{Keys: []string{}, DryRun: dryRun}, Missing: MissingReport{Keys: []string{}}}
	var errs []error
	if m.Baselines != nil {
		r, err := m.Baselines.ExpireBaselines(ctx, m.BranchBaselineDays, dryRun)
		rep.BranchBaselines = r
		errs = append(errs, err)
	}
	if m.Retention != nil {
		r, err := m.Retention.Run(ctx, dryRun)
		rep.Retention = r
		errs = append(errs, err)
	}
	if m.Sweeper != nil {
		r, err := m.Sweeper.SweepOnce(ctx, dryRun)
		rep.Orphans = r
		errs = append(errs, err)
	}
	if m.Missing != nil {
		r, err := m.Missing.Check(ctx)
		rep.Missing = r
		errs = append(errs, err)
	}
	for _, e := range errs {
		if e != nil {
			rep.Errors = append(rep.Errors, e.Error())
		}
	}
	rep.FinishedAt = time.Now().UTC()
	if m.Observe != nil {
		m.Observe(rep)
	}
	return rep, errors.Join(errs...)
}
