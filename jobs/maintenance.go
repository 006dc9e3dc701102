package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/snapq/snapq/artifacts"
)

// A maintenance pass is the expiry of baselines that expire (branch
// baselines, wired in from regression), then retention, then the orphan
// sweep, then the check for rows whose object is missing. It runs as a periodic task (one replica per
// pass, see KindSweep) or on demand (POST /v1/admin/sweep), and answers
// with one report.

// DefaultMissingCheck is the object keys one pass checks for a missing object.
const DefaultMissingCheck = 5000

// ObjectKeyLister pages through the object keys rows name (artifacts and
// thumbnails), in byte order.
type ObjectKeyLister interface {
	// ObjectKeysAfter returns at most limit distinct keys after after.
	ObjectKeysAfter(ctx context.Context, after string, limit int) ([]string, error)
}

// MissingReport is what one check for rows without an object found.
type MissingReport struct {
	Checked int `json:"checked"`
	Missing int `json:"missing"`
	// Keys are the missing objects' keys, at most MaxReportKeys.
	Keys []string `json:"keys"`
	// Wrapped: the check reached the last key, the next starts again.
	Wrapped bool `json:"wrapped"`
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

// Maintenance runs maintenance passes.
type Maintenance struct {
	// Baselines expires branch baselines (regression.BranchExpiry); nil:
	// none expire. It runs first, so images only an expired baseline named
	// are no longer protected when retention decides.
	Baselines BaselineExpirer
	// BranchBaselineDays is the expiry age of branch baselines whose suite
	// sets none (SNAPQ_BRANCH_BASELINE_DAYS; 0: never).
	BranchBaselineDays int
	Retention          *Retention // nil: no retention
	Sweeper            *Sweeper   // nil: no orphan sweep
	// Rows and Objects check rows for missing objects; nil Rows: no check.
	Rows       ObjectKeyLister
	Objects    objectStatter
	MaxMissing int // keys checked per pass (default DefaultMissingCheck)
	Logger     *slog.Logger
	// Observe, when set, sees every report (metrics).
	Observe func(SweepReport)
	// ForceDryRun makes every pass a dry run whatever its caller asks
	// (SNAPQ_SWEEP_DRY_RUN on the api).
	ForceDryRun bool

	running       sync.Mutex // one pass at a time
	mu            sync.Mutex
	missingCursor string
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
	if m.Rows != nil && m.Objects != nil {
		r, err := m.checkMissing(ctx)
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

// checkMissing stats the next MaxMissing keys rows name, from where the last
// check stopped, and logs each whose object is gone.
func (m *Maintenance) checkMissing(ctx context.Context) (MissingReport, error) {
	rep := MissingReport{Keys: []string{}}
	limit := m.MaxMissing
	if limit <= 0 {
		limit = DefaultMissingCheck
	}
	m.mu.Lock()
	cursor := m.missingCursor
	m.mu.Unlock()
	var errs []error
	for rep.Checked < limit {
		want := min(500, limit-rep.Checked)
		keys, err := m.Rows.ObjectKeysAfter(ctx, cursor, want)
		if err != nil {
			errs = append(errs, fmt.Errorf("object keys after %q: %w", cursor, err))
			break
		}
		missing, err := m.statAll(ctx, keys)
		if err != nil {
			errs = append(errs, err)
			break // keep the cursor: check these keys again next time
		}
		rep.Checked += len(keys)
		for _, k := range missing {
			rep.Missing++
			Log(m.Logger).Warn("object missing: a row names a key the bucket does not hold", "key", k)
			if len(rep.Keys) < MaxReportKeys {
				rep.Keys = append(rep.Keys, k)
			}
		}
		if len(keys) > 0 {
			cursor = keys[len(keys)-1]
		}
		if len(keys) < want {
			rep.Wrapped, cursor = true, ""
			break
		}
	}
	m.mu.Lock()
	m.missingCursor = cursor
	m.mu.Unlock()
	Log(m.Logger).Info("missing-object check", "checked", rep.Checked, "missing", rep.Missing, "wrapped", rep.Wrapped)
	return rep, errors.Join(errs...)
}

// statAll returns which of keys have no object, eight stats at a time; any
// other failure than not-found is returned (nothing is called missing then).
func (m *Maintenance) statAll(ctx context.Context, keys []string) ([]string, error) {
	gone := make([]bool, len(keys))
	errs := make([]error, len(keys))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, err := m.Objects.Stat(ctx, k)
			switch {
			case errors.Is(err, artifacts.ErrNotFound):
				gone[i] = true
			case err != nil:
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("stat objects: %w", err)
	}
	var out []string
	for i, g := range gone {
		if g {
			out = append(out, keys[i])
		}
	}
	return out, nil
}

// SlotClaimer records that a pass ran for a slot; true when this call
// claimed it (store.ClaimSweepSlot).
type SlotClaimer interface {
	ClaimSweepSlot(ctx context.Context, slot time.Time) (bool, error)
}

// SweepTask runs maintenance:sweep tasks in a worker: it claims the
// payload's interval slot in Postgres, so api replicas whose schedulers fire
// at different moments of an interval still make one pass, and runs it with
// the payload's settings.
type SweepTask struct {
	Maintenance *Maintenance
	Slots       SlotClaimer
	Now         func() time.Time

	mu sync.Mutex // one pass at a time in this process
}

// Run is the asynq handler of jobs.KindSweep.
func (t *SweepTask) Run(ctx context.Context, p SweepPayload) error {
	now := time.Now()
	if t.Now != nil {
		now = t.Now()
	}
	if p.IntervalS > 0 {
		slot := now.Truncate(time.Duration(p.IntervalS) * time.Second)
		ok, err := t.Slots.ClaimSweepSlot(ctx, slot)
		if err != nil {
			return fmt.Errorf("claim sweep slot: %w", err)
		}
		if !ok {
			Log(t.Maintenance.Logger).Info("maintenance pass skipped: another replica ran this interval's", "slot", slot)
			return nil
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.Maintenance
	grace := time.Duration(p.GraceS) * time.Second
	if m.Retention != nil {
		m.Retention.DefaultDays, m.Retention.Grace = p.RetentionDays, grace
	}
	m.BranchBaselineDays = p.BranchBaselineDays
	if m.Sweeper != nil {
		m.Sweeper.Grace = grace
	}
	// A failed pass is in its report and the log; it is not retried (the
	// next interval's pass carries on), so the task itself succeeds.
	if _, err := m.Pass(ctx, p.DryRun); err != nil {
		Log(m.Logger).Warn("maintenance pass", "err", err)
	}
	return nil
}
