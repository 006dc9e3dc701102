package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/jobs"
)

// Retention: batches (with their jobs, artifacts and objects) older than a
// number of days, and suite runs beyond the newest N, are deleted. The days
// come from the run's suite (its spec's retention.days), else the batch's API
// key (api_keys.retention_days), else the default (SNAPQ_RETENTION_DAYS); 0
// keeps forever. A batch is never deleted while it has queued or running
// jobs or a running run, nor while any baseline version (active or not: a
// restore brings an old one back) or another batch's comparison names one
// of its artifacts; such a batch is kept whole and counted as protected.
// Objects go only when no row names their key any more, so a
// content-addressed object shared with a kept batch or a baseline survives.

// MaxRetentionDays bounds every retention days setting (100 years).
const MaxRetentionDays = 36500

// RetentionCandidate is one batch the store found past a retention rule,
// with what the selection needs to decide. Its fields come from one query.
type RetentionCandidate struct {
	BatchID   string
	CreatedAt time.Time
	// KeyDays is the batch's API key's own setting; nil: the default.
	KeyDays *int
	// SuiteID is the suite of the run the batch is; "" for a plain batch.
	SuiteID string
	// SuiteDays is the suite's retention.days; nil: the key's or the default.
	SuiteDays *int
	// KeepRuns is the suite's retention.keep_runs; 0: no count limit.
	KeepRuns int
	// RunRank is 1 for the suite's newest run, 2 for the one before, ...
	RunRank int
	// Active: the batch has queued or running jobs, or its run is running.
	Active bool
	// Protected: a baseline, or a comparison of another batch, names one of
	// its artifacts.
	Protected bool
}

// Expiry is a batch the selection chose, and why.
type Expiry struct {
	BatchID string `json:"batch_id"`
	// Reason is "age" (older than its days) or "keep_runs" (beyond the
	// suite's newest runs).
	Reason string `json:"reason"`
}

// RetentionDays is the days that apply to c under the default def: the
// suite's, else the key's, else def. 0 keeps forever.
func (c RetentionCandidate) RetentionDays(def int) int {
	switch {
	case c.SuiteID != "" && c.SuiteDays != nil:
		return *c.SuiteDays
	case c.KeyDays != nil:
		return *c.KeyDays
	}
	return def
}

// SelectExpired decides which candidates go at now under default days def:
// those past their days or beyond their suite's keep_runs, unless active or
// protected (returned as kept). It is pure: the store's query may return
// more than expires, never less.
func SelectExpired(cands []RetentionCandidate, def int, now time.Time) (expired []Expiry, kept int) {
	for _, c := range cands {
		reason := ""
		if days := c.RetentionDays(def); days > 0 && !c.CreatedAt.After(now.Add(-time.Duration(days)*24*time.Hour)) {
			reason = "age"
		} else if c.SuiteID != "" && c.KeepRuns > 0 && c.RunRank > c.KeepRuns {
			reason = "keep_runs"
		}
		if reason == "" {
			continue
		}
		if c.Active || c.Protected {
			kept++
			continue
		}
		expired = append(expired, Expiry{BatchID: c.BatchID, Reason: reason})
	}
	return expired, kept
}

// StoredObject is an object key a deleted row named, with its size.
type StoredObject struct {
	Key   string `json:"key"`
	Bytes int64  `json:"bytes"`
}

// BatchDeletion is what deleting one batch's rows did.
type BatchDeletion struct {
	// Deleted is false when the batch was gone, or had become active or
	// protected since it was selected: nothing was deleted.
	Deleted bool
	// Objects are the keys the batch's rows named that no row names any more.
	Objects []StoredObject
}

// RetentionStore is what retention asks the database.
type RetentionStore interface {
	// RetentionCandidates returns at most limit batches created before now
	// that may be past a retention rule (a superset of what expires).
	RetentionCandidates(ctx context.Context, now time.Time, defaultDays, limit int) ([]RetentionCandidate, error)
	// DeleteBatchRows deletes a batch and every row under it in one
	// transaction, after checking again under lock that it is neither
	// active nor protected; dryRun rolls the transaction back (the answer
	// says what would have gone).
	DeleteBatchRows(ctx context.Context, id string, dryRun bool) (BatchDeletion, error)
}

// Retention deletes what its policies say has expired.
type Retention struct {
	Repo    RetentionStore
	Objects ObjectLister
	Logger  *slog.Logger
	// DefaultDays applies to batches whose suite or key sets none
	// (SNAPQ_RETENTION_DAYS; 0 keeps forever).
	DefaultDays int
	// Grace: a content object written or touched more recently than this is
	// left to the orphan sweep (a worker may be committing a row naming it).
	Grace time.Duration
	// MaxBatches bounds the batches one pass deletes (default 1000).
	MaxBatches int
	Now        func() time.Time
}

// RetentionReport is what one retention pass did (or would do).
type RetentionReport struct {
	Batches int `json:"batches"`
	// Runs is how many of Batches were suite runs.
	Runs int `json:"runs"`
	// Protected is expired batches kept: active, or naming a baseline's image.
	Protected int   `json:"protected"`
	Objects   int   `json:"objects"`
	Bytes     int64 `json:"bytes"`
	// Deferred is objects left to the orphan sweep: content touched within the grace.
	Deferred int `json:"deferred"`
	// Expired lists the batches deleted (or, in a dry run, that would be).
	Expired []Expiry `json:"expired"`
	// Keys lists the objects deleted (or that would be), at most MaxReportKeys.
	Keys []string `json:"keys"`
}

// MaxReportKeys bounds the keys a report lists; counts are always whole.
const MaxReportKeys = 1000

// Run runs one retention pass: it selects, deletes rows batch by batch
// (newest first, so a run's comparisons go before the older batches whose
// artifacts they name), then the objects no row names any more.
func (r *Retention) Run(ctx context.Context, dryRun bool) (RetentionReport, error) {
	rep := RetentionReport{Expired: []Expiry{}, Keys: []string{}}
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	limit := r.MaxBatches
	if limit <= 0 {
		limit = 1000
	}
	cands, err := r.Repo.RetentionCandidates(ctx, now, r.DefaultDays, limit)
	if err != nil {
		return rep, fmt.Errorf("retention candidates: %w", err)
	}
	expired, kept := SelectExpired(cands, r.DefaultDays, now)
	rep.Protected = kept
	suites := map[string]bool{}
	for _, c := range cands {
		if c.SuiteID != "" {
			suites[c.BatchID] = true
		}
	}
	var errs []error
	grace := r.Grace
	if grace <= 0 {
		grace = DefaultSweepGrace
	}
	cutoff := now.Add(-grace)
	for _, e := range expired {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		del, err := r.Repo.DeleteBatchRows(ctx, e.BatchID, dryRun)
		if err != nil {
			errs = append(errs, fmt.Errorf("delete batch %s: %w", e.BatchID, err))
			continue
		}
		if !del.Deleted {
			rep.Protected++
			continue
		}
		rep.Batches++
		if suites[e.BatchID] {
			rep.Runs++
		}
		rep.Expired = append(rep.Expired, e)
		errs = append(errs, r.deleteObjects(ctx, del.Objects, cutoff, dryRun, &rep)...)
	}
	jobs.Log(r.Logger).Info("retention pass", "batches", rep.Batches, "runs", rep.Runs, "protected", rep.Protected,
		"objects", rep.Objects, "bytes", rep.Bytes, "deferred", rep.Deferred, "dry_run", dryRun)
	return rep, errors.Join(errs...)
}

// deleteObjects deletes the objects a batch's deletion left unreferenced
// (marked as being deleted when the store is an ObjectMarker: it is told
// which went), content touched since cutoff apart.
func (r *Retention) deleteObjects(ctx context.Context, objects []StoredObject, cutoff time.Time, dryRun bool, rep *RetentionReport) []error {
	var errs []error
	statter, _ := r.Objects.(ObjectStatter)
	marked := map[string]bool{}
	var gone []artifacts.Object
	for _, o := range objects {
		marked[o.Key] = true
	}
	for _, o := range objects {
		if artifacts.IsContentKey(o.Key) && statter != nil {
			st, err := statter.Stat(ctx, o.Key)
			if err != nil || !st.Modified.Before(cutoff) {
				rep.Deferred++ // gone, unreadable or just touched: the orphan sweep judges it later
				continue
			}
		}
		if !dryRun {
			if err := r.Objects.Delete(ctx, o.Key); err != nil {
				errs = append(errs, fmt.Errorf("delete %s: %w", o.Key, err))
				continue
			}
			gone = append(gone, artifacts.Object{Key: o.Key})
		}
		rep.Objects++
		rep.Bytes += o.Bytes
		if len(rep.Keys) < MaxReportKeys {
			rep.Keys = append(rep.Keys, o.Key)
		}
	}
	if dryRun { // nothing was marked: the deletion was rolled back
		return errs
	}
	return append(errs, finishDeletion(ctx, r.Repo, marked, gone))
}
