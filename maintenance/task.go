package maintenance

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/snapq/snapq/jobs"
)

// KindSweep is one maintenance pass: branch baseline expiry, retention, the
// orphan sweep and the missing-object check. The string is stable on the
// wire: tasks queued by any version carry it.
const KindSweep = "maintenance:sweep"

// SweepPassID is the payload id of every maintenance:sweep task: replicas
// with the same settings enqueue the same payload, which is unique per
// interval in the queue.
const SweepPassID = "00000000-0000-4000-8000-00000000f5ee"

// SweepPayload is the payload of a maintenance:sweep task. It carries the
// api's settings, so workers need none of their own.
type SweepPayload struct {
	PassID string `json:"pass_id"` // SweepPassID
	DryRun bool   `json:"dry_run"`
	// RetentionDays is the default retention (SNAPQ_RETENTION_DAYS; 0: keep).
	RetentionDays int `json:"retention_days"`
	// BranchBaselineDays is the default expiry of branch baselines
	// (SNAPQ_BRANCH_BASELINE_DAYS; 0, as in a payload from an api without
	// it: never).
	BranchBaselineDays int `json:"branch_baseline_days"`
	// GraceS is SNAPQ_SWEEP_GRACE in seconds.
	GraceS int64 `json:"grace_s"`
	// IntervalS is SNAPQ_SWEEP_INTERVAL in seconds: passes are claimed per
	// interval, so replicas firing at different moments run one pass.
	IntervalS int64 `json:"interval_s"`
}

func (SweepPayload) Kind() string { return KindSweep }

func (p SweepPayload) ID() string { return p.PassID }

// Rule: on the regression queue, 30 minutes a pass, unique per
// DefaultSweepInterval rather than by task id (a pass that failed is
// archived, and a fixed id would then refuse every later one; the api's
// scheduler sets the uniqueness to its interval). Not retried: the next pass
// carries on.
func (SweepPayload) Rule() jobs.TaskRule {
	return jobs.TaskRule{Queue: jobs.QueueRegression, Timeout: 30 * time.Minute, MaxDelay: time.Minute, Unique: DefaultSweepInterval}
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

// Run handles a KindSweep task (see queue.Register).
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
			jobs.Log(t.Maintenance.Logger).Info("maintenance pass skipped: another replica ran this interval's", "slot", slot)
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
		jobs.Log(m.Logger).Warn("maintenance pass", "err", err)
	}
	return nil
}
