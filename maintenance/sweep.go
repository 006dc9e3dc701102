package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/jobs"
)

// Sweeper defaults; cmd/ documents SNAPQ_SWEEP_INTERVAL.
const (
	// DefaultSweepInterval is the least time between two sweeps.
	DefaultSweepInterval = 10 * time.Minute
	// DefaultSweepGrace is how old an object must be before it may be swept:
	// far longer than any upload-to-commit gap of a live attempt, so a
	// worker that is still writing (even one the reconciler gave up on) or
	// a comparison between its upload and its row never loses an object.
	DefaultSweepGrace = time.Hour
	// DefaultSweepMaxObjects bounds the objects one sweep lists.
	DefaultSweepMaxObjects = 10000
)

// sweepPrefix is where job artifacts live: batches/<batch>/jobs/<job>/<name>.
const sweepPrefix = "batches/"

// ObjectLister lists and deletes stored objects. artifacts.Store implements it.
type ObjectLister interface {
	List(ctx context.Context, prefix, startAfter string, limit int) ([]artifacts.Object, error)
	Delete(ctx context.Context, key string) error
}

// SweepStore is what the Sweeper asks the database.
type SweepStore interface {
	// JobStatuses returns the status of each of ids that exists; a missing
	// job has no entry.
	JobStatuses(ctx context.Context, ids []string) (map[string]jobs.JobStatus, error)
	// ReferencedKeys returns which of keys an artifact row names.
	ReferencedKeys(ctx context.Context, keys []string) (map[string]bool, error)
}

// ObjectMarker makes deleting an object atomic with finding it unreferenced:
// the keys are marked as being deleted under their locks, and a commit that
// reuses a marked key is refused (ErrObjectGone). store.Store implements it;
// a SweepStore or RetentionStore without it is checked, then acted on.
type ObjectMarker interface {
	// MarkUnreferenced marks and returns those of keys no row names.
	MarkUnreferenced(ctx context.Context, keys []string) (map[string]bool, error)
	// FinishObjectDeletion records which marked keys were deleted and which kept.
	FinishObjectDeletion(ctx context.Context, deleted, kept []string) error
}

// unreferenced returns which of keys no row names: marked as being deleted
// when repo is an ObjectMarker (then finish must be told what became of them).
func unreferenced(ctx context.Context, repo SweepStore, keys []string) (map[string]bool, error) {
	if m, ok := repo.(ObjectMarker); ok {
		return m.MarkUnreferenced(ctx, keys)
	}
	referenced, err := repo.ReferencedKeys(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, k := range keys {
		if !referenced[k] {
			out[k] = true
		}
	}
	return out, nil
}

// finishDeletion tells an ObjectMarker repo which marked keys went.
func finishDeletion(ctx context.Context, repo any, marked map[string]bool, gone []artifacts.Object) error {
	m, ok := repo.(ObjectMarker)
	if !ok || len(marked) == 0 {
		return nil
	}
	var deleted, kept []string
	done := map[string]bool{}
	for _, o := range gone {
		done[o.Key] = true
		deleted = append(deleted, o.Key)
	}
	for k := range marked {
		if !done[k] {
			kept = append(kept, k)
		}
	}
	return m.FinishObjectDeletion(ctx, deleted, kept)
}

// deletedOf is gone, or none in a dry run (nothing was deleted).
func deletedOf(gone []artifacts.Object, dryRun bool) []artifacts.Object {
	if dryRun {
		return nil
	}
	return gone
}

// Sweeper deletes orphaned objects: objects under batches/ that no artifact
// row names, left behind by a job whose uploads or final commit failed after
// some of its objects were stored. An object is deleted only when it is
// older than Grace, its job is final or gone, and no artifact row names its
// key; anything else, including keys of another shape, is kept.
//
// A sweep lists at most MaxObjects objects and carries on from there the
// next time, so a large bucket is covered over several sweeps.
type Sweeper struct {
	Objects ObjectLister
	Repo    SweepStore
	Logger  *slog.Logger
	// Interval is the least time between sweeps run by Step (default
	// DefaultSweepInterval); the reconciler's rounds are usually shorter.
	Interval time.Duration
	// Grace is the age below which an object is never swept (default
	// DefaultSweepGrace).
	Grace time.Duration
	// MaxObjects bounds the objects one sweep lists (default
	// DefaultSweepMaxObjects).
	MaxObjects int
	// Now is the clock (default time.Now); tests move it.
	Now func() time.Time
	// DryRun makes sweeps count and log what they would delete, deleting
	// nothing (SNAPQ_SWEEP_DRY_RUN).
	DryRun bool

	mu            sync.Mutex
	last          time.Time // when Step last swept
	cursor        string    // the key the next sweep lists after; "" from the start
	contentCursor string    // the same under artifacts.ContentPrefix
}

// SweepResult counts one sweep's work.
type SweepResult struct {
	Listed  int `json:"listed"`  // objects looked at
	Deleted int `json:"deleted"` // orphans removed (or, in a dry run, that would be)
	// Bytes is the size of the Deleted objects.
	Bytes int64 `json:"bytes"`
	// Wrapped is true when the listing reached the end of batches/ and of
	// content/, so the next sweep starts from the beginning.
	Wrapped bool `json:"wrapped"`
	// DryRun says nothing was deleted.
	DryRun bool `json:"dry_run"`
	// Keys lists the Deleted objects, at most MaxReportKeys.
	Keys []string `json:"keys"`
}

// Step is the Sweeper as a reconciler step: it sweeps when Interval has
// passed since its last sweep and otherwise does nothing.
func (s *Sweeper) Step() jobs.ReconcileStep {
	return jobs.ReconcileStep{Name: "sweep", Run: func(ctx context.Context) (int, error) {
		s.mu.Lock()
		interval := s.Interval
		if interval <= 0 {
			interval = DefaultSweepInterval
		}
		due := s.last.IsZero() || s.now().Sub(s.last) >= interval
		if due {
			s.last = s.now()
		}
		s.mu.Unlock()
		if !due {
			return 0, nil
		}
		res, err := s.Sweep(ctx)
		return res.Deleted, err
	}}
}

// Sweep runs one sweep now, from where the last one stopped: the per-attempt
// keys under batches/, then the content-addressed objects, and logs what it
// did (or, in a dry run, would do).
func (s *Sweeper) Sweep(ctx context.Context) (SweepResult, error) {
	return s.SweepOnce(ctx, s.DryRun)
}

// SweepOnce is Sweep with its own dry-run setting (an on-demand pass).
func (s *Sweeper) SweepOnce(ctx context.Context, dryRun bool) (SweepResult, error) {
	s.mu.Lock()
	start, contentStart := s.cursor, s.contentCursor
	s.mu.Unlock()
	res, cursor, err := s.sweepPrefix(ctx, sweepPrefix, start, dryRun, s.sweepPage)
	cres, contentCursor, cerr := s.sweepPrefix(ctx, artifacts.ContentPrefix, contentStart, dryRun, s.sweepContentPage)
	s.mu.Lock()
	s.cursor, s.contentCursor = cursor, contentCursor
	s.mu.Unlock()
	res.Listed += cres.Listed
	res.Deleted += cres.Deleted
	res.Bytes += cres.Bytes
	res.Wrapped = res.Wrapped && cres.Wrapped
	res.DryRun = dryRun
	res.Keys = append(res.Keys, cres.Keys...)
	if res.Keys == nil {
		res.Keys = []string{}
	}
	res.Keys = res.Keys[:min(len(res.Keys), MaxReportKeys)]
	jobs.Log(s.Logger).Info("orphan sweep", "listed", res.Listed, "deleted", res.Deleted, "bytes", res.Bytes,
		"wrapped", res.Wrapped, "dry_run", dryRun)
	return res, errors.Join(err, cerr)
}

// sweepPrefix sweeps one prefix from after start with sweep, a page at a time.
func (s *Sweeper) sweepPrefix(ctx context.Context, prefix, start string, dryRun bool,
	sweep func(ctx context.Context, page []artifacts.Object, cutoff time.Time, dryRun bool) ([]artifacts.Object, error)) (SweepResult, string, error) {
	maxObjects := s.MaxObjects
	if maxObjects <= 0 {
		maxObjects = DefaultSweepMaxObjects
	}
	grace := s.Grace
	if grace <= 0 {
		grace = DefaultSweepGrace
	}
	cutoff := s.now().Add(-grace)

	var res SweepResult
	var errs []error
	cursor := start
	for res.Listed < maxObjects {
		want := min(artifacts.MaxListPage, maxObjects-res.Listed)
		page, err := s.Objects.List(ctx, prefix, cursor, want)
		if err != nil {
			errs = append(errs, fmt.Errorf("list objects after %q: %w", cursor, err))
			break
		}
		res.Listed += len(page)
		if len(page) > 0 {
			cursor = page[len(page)-1].Key
		}
		gone, err := sweep(ctx, page, cutoff, dryRun)
		for _, o := range gone {
			res.Deleted++
			res.Bytes += o.Bytes
			if len(res.Keys) < MaxReportKeys {
				res.Keys = append(res.Keys, o.Key)
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
		if len(page) < want {
			res.Wrapped, cursor = true, ""
			break
		}
	}
	return res, cursor, errors.Join(errs...)
}

// sweepContentPage deletes the content-addressed objects of page that no
// artifact row names and that were last written (or touched by
// artifacts.Store.PutContent) before cutoff. Each is looked at again right
// before it is deleted: a worker that touched it since the listing is about
// to commit a row naming it.
func (s *Sweeper) sweepContentPage(ctx context.Context, page []artifacts.Object, cutoff time.Time, dryRun bool) ([]artifacts.Object, error) {
	var old []artifacts.Object
	var keys []string
	for _, o := range page {
		if o.Modified.Before(cutoff) && artifacts.IsContentKey(o.Key) {
			old = append(old, o)
			keys = append(keys, o.Key)
		}
	}
	if len(old) == 0 {
		return nil, nil
	}
	free, err := unreferenced(ctx, s.Repo, keys)
	if err != nil {
		return nil, fmt.Errorf("referenced keys: %w", err)
	}
	statter, _ := s.Objects.(ObjectStatter)
	var gone []artifacts.Object
	var errs []error
	for _, o := range old {
		if !free[o.Key] {
			continue
		}
		if statter != nil {
			now, err := statter.Stat(ctx, o.Key)
			if err != nil || !now.Modified.Before(cutoff) {
				continue // gone already, unreadable, or touched since the listing
			}
		}
		if !dryRun {
			if err := s.Objects.Delete(ctx, o.Key); err != nil {
				errs = append(errs, fmt.Errorf("delete %s: %w", o.Key, err))
				continue
			}
		}
		gone = append(gone, o)
	}
	errs = append(errs, finishDeletion(ctx, s.Repo, free, deletedOf(gone, dryRun)))
	return gone, errors.Join(errs...)
}

// sweepPage deletes the orphans among page.
func (s *Sweeper) sweepPage(ctx context.Context, page []artifacts.Object, cutoff time.Time, dryRun bool) ([]artifacts.Object, error) {
	var old []artifacts.Object
	jobOf := map[string]string{} // object key -> job id
	seen := map[string]bool{}
	var ids, keys []string
	for _, o := range page {
		if !o.Modified.Before(cutoff) {
			continue // may belong to an attempt still in flight
		}
		id, ok := sweepJobID(o.Key)
		if !ok {
			continue // not a job artifact's key: not ours to judge
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
		jobOf[o.Key] = id
		old = append(old, o)
		keys = append(keys, o.Key)
	}
	if len(old) == 0 {
		return nil, nil
	}
	statuses, err := s.Repo.JobStatuses(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("job statuses: %w", err)
	}
	free, err := unreferenced(ctx, s.Repo, keys)
	if err != nil {
		return nil, fmt.Errorf("referenced keys: %w", err)
	}
	var gone []artifacts.Object
	var errs []error
	for _, o := range old {
		if !free[o.Key] {
			continue
		}
		if st, exists := statuses[jobOf[o.Key]]; exists && !st.Final() {
			continue
		}
		if !dryRun {
			if err := s.Objects.Delete(ctx, o.Key); err != nil {
				errs = append(errs, fmt.Errorf("delete %s: %w", o.Key, err))
				continue
			}
		}
		gone = append(gone, o)
	}
	errs = append(errs, finishDeletion(ctx, s.Repo, free, deletedOf(gone, dryRun)))
	return gone, errors.Join(errs...)
}

func (s *Sweeper) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// sweepJobID returns the job id of a key batches/<batch>/jobs/<job>/<name>,
// with ok=false for any other shape or an id that is not a UUID.
func sweepJobID(key string) (string, bool) {
	parts := strings.SplitN(key, "/", 5)
	if len(parts) != 5 || parts[0] != "batches" || parts[2] != "jobs" || parts[4] == "" ||
		!jobs.ValidID(parts[1]) || !jobs.ValidID(parts[3]) {
		return "", false
	}
	return parts[3], true
}
