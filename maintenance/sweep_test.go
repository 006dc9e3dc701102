package maintenance_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/maintenance"
)

var (
	_ maintenance.ObjectLister = (*sweepBucket)(nil)
	_ maintenance.SweepStore   = (*sweepDB)(nil)
)

// sweepBucket is an in-memory bucket with List's paging contract.
type sweepBucket struct {
	objs       map[string]time.Time // key -> last modified
	lists      int
	failList   bool
	failDelete string
}

func (b *sweepBucket) List(_ context.Context, prefix, startAfter string, limit int) ([]artifacts.Object, error) {
	b.lists++
	if b.failList {
		return nil, errors.New("list: storage unavailable")
	}
	var keys []string
	for k := range b.objs {
		if strings.HasPrefix(k, prefix) && k > startAfter {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(keys) > limit {
		keys = keys[:limit]
	}
	out := make([]artifacts.Object, 0, len(keys))
	for _, k := range keys {
		out = append(out, artifacts.Object{Key: k, Modified: b.objs[k]})
	}
	return out, nil
}

func (b *sweepBucket) Delete(_ context.Context, key string) error {
	if key == b.failDelete {
		return errors.New("delete: storage unavailable")
	}
	delete(b.objs, key)
	return nil
}

func (b *sweepBucket) keys() []string {
	var ks []string
	for k := range b.objs {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// sweepDB holds job statuses and the keys artifact rows name.
type sweepDB struct {
	status map[string]jobs.JobStatus
	rows   map[string]bool
}

func (d *sweepDB) JobStatuses(_ context.Context, ids []string) (map[string]jobs.JobStatus, error) {
	out := map[string]jobs.JobStatus{}
	for _, id := range ids {
		if s, ok := d.status[id]; ok {
			out[id] = s
		}
	}
	return out, nil
}

func (d *sweepDB) ReferencedKeys(_ context.Context, keys []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, k := range keys {
		if d.rows[k] {
			out[k] = true
		}
	}
	return out, nil
}

// ignoreKeys leaves SweepResult.Keys (the report's list) out of comparisons
// of counts; TestSweepResultKeys checks it.
var ignoreKeys = cmpopts.IgnoreFields(maintenance.SweepResult{}, "Keys")

const sweepBatch = "0190a000-0000-7000-8000-000000000000"

func sweepJob(n int) string { return fmt.Sprintf("0190a000-0000-7000-8000-%012d", n) }

func sweepKey(job, name string) string {
	return artifacts.Key("batches", sweepBatch, "jobs", job, name)
}

func TestSweeperDeletesOnlyOrphans(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	old, fresh := now.Add(-2*time.Hour), now.Add(-time.Minute)
	tests := []struct {
		name     string
		status   jobs.JobStatus // "" for a job that does not exist
		modified time.Time
		row      bool
		key      string // default sweepKey(job, "shot.png")
		deleted  bool
	}{
		{name: "failed job, old, no row", status: jobs.StatusFailed, modified: old, deleted: true},
		{name: "succeeded job, old, no row", status: jobs.StatusSucceeded, modified: old, deleted: true},
		{name: "canceled job, old, no row", status: jobs.StatusCanceled, modified: old, deleted: true},
		{name: "job gone, old", modified: old, deleted: true},
		{name: "referenced", status: jobs.StatusSucceeded, modified: old, row: true},
		{name: "fresh", status: jobs.StatusFailed, modified: fresh},
		{name: "running job", status: jobs.StatusRunning, modified: old},
		{name: "queued job (waiting for a retry)", status: jobs.StatusQueued, modified: old},
		{name: "not a job key", modified: old, key: "batches/" + sweepBatch + "/other/x.png"},
		{name: "job id not a UUID", modified: old, key: "batches/" + sweepBatch + "/jobs/nope/x.png"},
	}
	bucket := &sweepBucket{objs: map[string]time.Time{}}
	db := &sweepDB{status: map[string]jobs.JobStatus{}, rows: map[string]bool{}}
	var want []string
	for i, tt := range tests {
		job := sweepJob(i)
		key := tt.key
		if key == "" {
			key = sweepKey(job, "shot.png")
		}
		bucket.objs[key] = tt.modified
		if tt.status != "" {
			db.status[job] = tt.status
		}
		if tt.row {
			db.rows[key] = true
		}
		if !tt.deleted {
			want = append(want, key)
		}
	}
	bucket.objs["elsewhere/old.png"] = old // outside batches/: never listed
	want = append(want, "elsewhere/old.png")
	sort.Strings(want)

	sw := &maintenance.Sweeper{Objects: bucket, Repo: db, Now: func() time.Time { return now }}
	res, err := sw.Sweep(context.Background())
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if diff := cmp.Diff(maintenance.SweepResult{Listed: len(tests), Deleted: 4, Wrapped: true}, res, ignoreKeys); diff != "" {
		t.Errorf("Sweep result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, bucket.keys()); diff != "" {
		t.Errorf("objects left (-want +got):\n%s", diff)
	}
}

func TestSweeperBoundsEachSweep(t *testing.T) {
	t.Parallel()
	now := time.Now()
	bucket := &sweepBucket{objs: map[string]time.Time{}}
	const n = 2500
	for i := range n {
		bucket.objs[sweepKey(sweepJob(i), "shot.png")] = now.Add(-2 * time.Hour) // jobs gone: all orphans
	}
	sw := &maintenance.Sweeper{Objects: bucket, Repo: &sweepDB{}, MaxObjects: 1200}

	var got []maintenance.SweepResult
	for range 3 {
		res, err := sw.Sweep(context.Background())
		if err != nil {
			t.Fatalf("Sweep: %v", err)
		}
		got = append(got, res)
	}
	want := []maintenance.SweepResult{
		{Listed: 1200, Deleted: 1200},
		{Listed: 1200, Deleted: 1200},
		{Listed: 100, Deleted: 100, Wrapped: true},
	}
	if diff := cmp.Diff(want, got, ignoreKeys); diff != "" {
		t.Errorf("sweeps (-want +got):\n%s", diff)
	}
	if left := len(bucket.objs); left != 0 {
		t.Errorf("%d objects left, want 0", left)
	}
}

func TestSweeperStepRunsOncePerInterval(t *testing.T) {
	t.Parallel()
	now := time.Now()
	bucket := &sweepBucket{objs: map[string]time.Time{}}
	sw := &maintenance.Sweeper{Objects: bucket, Repo: &sweepDB{}, Interval: 10 * time.Minute,
		Now: func() time.Time { return now }}
	step := sw.Step()
	add := func() { bucket.objs[sweepKey(sweepJob(len(bucket.objs)), "a.png")] = now.Add(-2 * time.Hour) }

	var got []int
	for _, advance := range []time.Duration{0, time.Minute, 8 * time.Minute, time.Minute} {
		now = now.Add(advance)
		add()
		n, err := step.Run(context.Background())
		if err != nil {
			t.Fatalf("step: %v", err)
		}
		got = append(got, n)
	}
	// The first round sweeps; the next two fall inside the interval; the
	// fourth, 10 minutes after the first, sweeps the three orphans left since.
	if diff := cmp.Diff([]int{1, 0, 0, 3}, got); diff != "" {
		t.Errorf("deleted per round (-want +got):\n%s", diff)
	}
}

func TestSweeperErrors(t *testing.T) {
	t.Parallel()
	old := time.Now().Add(-2 * time.Hour)
	a, b := sweepKey(sweepJob(1), "a.png"), sweepKey(sweepJob(2), "b.png")

	t.Run("list fails", func(t *testing.T) {
		t.Parallel()
		bucket := &sweepBucket{objs: map[string]time.Time{a: old}, failList: true}
		sw := &maintenance.Sweeper{Objects: bucket, Repo: &sweepDB{}}
		res, err := sw.Sweep(context.Background())
		if err == nil || res.Deleted != 0 {
			t.Errorf("Sweep = %+v, %v; want nothing deleted and an error", res, err)
		}
	})
	t.Run("one delete fails, the others go on", func(t *testing.T) {
		t.Parallel()
		bucket := &sweepBucket{objs: map[string]time.Time{a: old, b: old}, failDelete: a}
		sw := &maintenance.Sweeper{Objects: bucket, Repo: &sweepDB{}}
		res, err := sw.Sweep(context.Background())
		if err == nil || !strings.Contains(err.Error(), a) {
			t.Errorf("Sweep error = %v; want one naming %s", err, a)
		}
		if res.Deleted != 1 || !slices.Equal(bucket.keys(), []string{a}) {
			t.Errorf("Sweep = %+v, left %v; want %s deleted and %s kept", res, bucket.keys(), b, a)
		}
	})
}

// Content-addressed objects are swept by reference and age alone: an old
// object no row names goes, a named or fresh one stays; a dry run counts the
// same and deletes nothing.
func TestSweeperContentObjects(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	old, fresh := now.Add(-2*time.Hour), now.Add(-time.Minute)
	key := func(s string) string { return artifacts.ContentKey(sha(s)) }
	for _, dry := range []bool{true, false} {
		bucket := &sweepBucket{objs: map[string]time.Time{
			key("orphan"): old, key("named"): old, key("fresh"): fresh,
			artifacts.ContentPrefix + "not-a-sha": old, // not ours to judge
		}}
		db := &sweepDB{rows: map[string]bool{key("named"): true}}
		sw := &maintenance.Sweeper{Objects: bucket, Repo: db, Now: func() time.Time { return now }, DryRun: dry}
		res, err := sw.Sweep(context.Background())
		if err != nil {
			t.Fatalf("Sweep: %v", err)
		}
		if diff := cmp.Diff(maintenance.SweepResult{Listed: 4, Deleted: 1, Wrapped: true, DryRun: dry}, res, ignoreKeys); diff != "" {
			t.Errorf("dry run %v: result (-want +got):\n%s", dry, diff)
		}
		want := []string{artifacts.ContentPrefix + "not-a-sha", key("fresh"), key("named"), key("orphan")}
		if !dry {
			want = slices.DeleteFunc(want, func(k string) bool { return k == key("orphan") })
		}
		sort.Strings(want)
		if diff := cmp.Diff(want, bucket.keys()); diff != "" {
			t.Errorf("dry run %v: objects left (-want +got):\n%s", dry, diff)
		}
	}
}

func TestSweepResultKeys(t *testing.T) {
	t.Parallel()
	old := time.Now().Add(-2 * time.Hour)
	orphan := sweepKey(sweepJob(7), "a.png")
	bucket := &sweepBucket{objs: map[string]time.Time{orphan: old, sweepKey(sweepJob(8), "b.png"): old}}
	db := &sweepDB{status: map[string]jobs.JobStatus{}, rows: map[string]bool{sweepKey(sweepJob(8), "b.png"): true}}
	s := &maintenance.Sweeper{Objects: bucket, Repo: db}
	res, err := s.SweepOnce(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{orphan}, res.Keys); diff != "" || !res.DryRun || len(bucket.objs) != 2 {
		t.Errorf("dry run keys (-want +got):\n%s; dry_run %v, %d objects left", diff, res.DryRun, len(bucket.objs))
	}
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
