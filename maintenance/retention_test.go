package maintenance_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/maintenance"
)

func intp(n int) *int { return &n }

func TestSelectExpired(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	tests := []struct {
		name   string
		c      maintenance.RetentionCandidate
		def    int
		reason string // "": kept or not expired
		kept   bool   // expired but active or protected
	}{
		{name: "older than the default", c: maintenance.RetentionCandidate{CreatedAt: now.Add(-2 * day)}, def: 1, reason: "age"},
		{name: "exactly the default's age", c: maintenance.RetentionCandidate{CreatedAt: now.Add(-day)}, def: 1, reason: "age"},
		{name: "younger than the default", c: maintenance.RetentionCandidate{CreatedAt: now.Add(-day + time.Second)}, def: 1},
		{name: "default 0 keeps forever", c: maintenance.RetentionCandidate{CreatedAt: now.Add(-1000 * day)}, def: 0},
		{name: "the key's days beat the default", c: maintenance.RetentionCandidate{CreatedAt: now.Add(-2 * day), KeyDays: intp(3)}, def: 1},
		{name: "the key's 0 keeps forever", c: maintenance.RetentionCandidate{CreatedAt: now.Add(-900 * day), KeyDays: intp(0)}, def: 1},
		{name: "the key's shorter days", c: maintenance.RetentionCandidate{CreatedAt: now.Add(-2 * day), KeyDays: intp(1)}, def: 30, reason: "age"},
		{name: "the suite's days beat the key's", c: maintenance.RetentionCandidate{CreatedAt: now.Add(-2 * day), KeyDays: intp(1),
			SuiteID: "s", SuiteDays: intp(7), RunRank: 9}, def: 1},
		{name: "a suite without days falls back to the key", c: maintenance.RetentionCandidate{CreatedAt: now.Add(-2 * day), KeyDays: intp(1),
			SuiteID: "s", RunRank: 1}, def: 0, reason: "age"},
		{name: "suite days on a plain batch are ignored", c: maintenance.RetentionCandidate{CreatedAt: now.Add(-2 * day),
			SuiteDays: intp(7)}, def: 1, reason: "age"},
		{name: "beyond keep_runs, however young", c: maintenance.RetentionCandidate{CreatedAt: now.Add(-time.Minute), SuiteID: "s",
			KeepRuns: 3, RunRank: 4}, def: 0, reason: "keep_runs"},
		{name: "within keep_runs", c: maintenance.RetentionCandidate{CreatedAt: now.Add(-time.Minute), SuiteID: "s",
			KeepRuns: 3, RunRank: 3}, def: 0},
		{name: "keep_runs does not keep an old run", c: maintenance.RetentionCandidate{CreatedAt: now.Add(-10 * day), SuiteID: "s",
			SuiteDays: intp(5), KeepRuns: 3, RunRank: 1}, def: 0, reason: "age"},
		{name: "active", c: maintenance.RetentionCandidate{CreatedAt: now.Add(-2 * day), Active: true}, def: 1, kept: true},
		{name: "protected by a baseline", c: maintenance.RetentionCandidate{CreatedAt: now.Add(-2 * day), Protected: true}, def: 1, kept: true},
		{name: "protected beyond keep_runs", c: maintenance.RetentionCandidate{CreatedAt: now, SuiteID: "s", KeepRuns: 1, RunRank: 2,
			Protected: true}, def: 0, kept: true},
		{name: "not expired and active: not counted", c: maintenance.RetentionCandidate{CreatedAt: now, Active: true}, def: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.c.BatchID = "b"
			got, kept := maintenance.SelectExpired([]maintenance.RetentionCandidate{tc.c}, tc.def, now)
			var want []maintenance.Expiry
			if tc.reason != "" {
				want = []maintenance.Expiry{{BatchID: "b", Reason: tc.reason}}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("expired (-want +got):\n%s", diff)
			}
			if (kept == 1) != tc.kept {
				t.Errorf("kept %d, want kept=%v", kept, tc.kept)
			}
		})
	}
}

// retentionDB deletes batches from an in-memory set of rows: batch -> keys.
type retentionDB struct {
	cands   []maintenance.RetentionCandidate
	rows    map[string][]maintenance.StoredObject
	shared  map[string]bool // keys other (kept) rows name
	deleted []string
	nowKept map[string]bool // became active since the selection
}

func (d *retentionDB) RetentionCandidates(context.Context, time.Time, int, int) ([]maintenance.RetentionCandidate, error) {
	return d.cands, nil
}

func (d *retentionDB) DeleteBatchRows(_ context.Context, id string, dryRun bool) (maintenance.BatchDeletion, error) {
	if d.nowKept[id] {
		return maintenance.BatchDeletion{}, nil
	}
	var out maintenance.BatchDeletion
	out.Deleted = true
	for _, o := range d.rows[id] {
		if !d.shared[o.Key] {
			out.Objects = append(out.Objects, o)
		}
	}
	if !dryRun {
		d.deleted = append(d.deleted, id)
		delete(d.rows, id)
	}
	return out, nil
}

// statBucket is sweepBucket with Stat.
type statBucket struct{ sweepBucket }

func (b *statBucket) Stat(_ context.Context, key string) (artifacts.Object, error) {
	m, ok := b.objs[key]
	if !ok {
		return artifacts.Object{}, artifacts.ErrNotFound
	}
	return artifacts.Object{Key: key, Modified: m}, nil
}

func TestRetentionRun(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	old, fresh := now.Add(-48*time.Hour), now.Add(-time.Minute)
	sum := func(c byte) string { return artifacts.ContentKey(string(slices.Repeat([]byte{c}, 64))) }
	attempt := "batches/" + sweepBatch + "/jobs/" + sweepJob(1) + "/page.png"
	setup := func() (*retentionDB, *statBucket) {
		db := &retentionDB{
			cands: []maintenance.RetentionCandidate{
				{BatchID: "expired", CreatedAt: old},
				{BatchID: "run", CreatedAt: now, SuiteID: "s", KeepRuns: 1, RunRank: 2},
				{BatchID: "baseline", CreatedAt: old, Protected: true},
				{BatchID: "young", CreatedAt: now},
				{BatchID: "racing", CreatedAt: old},
			},
			rows: map[string][]maintenance.StoredObject{
				"expired": {{Key: sum('a'), Bytes: 10}, {Key: sum('b'), Bytes: 20}, {Key: attempt, Bytes: 5}, {Key: sum('f'), Bytes: 1}},
				"run":     {{Key: sum('c'), Bytes: 40}},
			},
			shared:  map[string]bool{sum('b'): true}, // a baseline's row names it too
			nowKept: map[string]bool{"racing": true},
		}
		b := &statBucket{sweepBucket{objs: map[string]time.Time{sum('a'): old, sum('b'): old, attempt: old,
			sum('c'): old, sum('f'): fresh, sum('d'): old}}}
		return db, b
	}

	t.Run("dry run deletes nothing", func(t *testing.T) {
		t.Parallel()
		db, b := setup()
		before := b.keys()
		r := &maintenance.Retention{Repo: db, Objects: b, DefaultDays: 1, Grace: time.Hour, Now: func() time.Time { return now }}
		rep, err := r.Run(context.Background(), true)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, b.keys()); diff != "" || len(db.deleted) > 0 {
			t.Errorf("dry run changed the bucket (-before +after):\n%s; deleted rows %v", diff, db.deleted)
		}
		if rep.Batches != 2 || rep.Objects != 3 || rep.Bytes != 55 {
			t.Errorf("dry run reports %d batches, %d objects, %d bytes; want 2, 3, 55", rep.Batches, rep.Objects, rep.Bytes)
		}
	})

	t.Run("deletes expired rows and the objects no row names", func(t *testing.T) {
		t.Parallel()
		db, b := setup()
		r := &maintenance.Retention{Repo: db, Objects: b, DefaultDays: 1, Grace: time.Hour, Now: func() time.Time { return now }}
		rep, err := r.Run(context.Background(), false)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"expired", "run"}, db.deleted); diff != "" {
			t.Errorf("deleted batches (-want +got):\n%s", diff)
		}
		// b is shared with a baseline; f was touched within the grace; d is not ours.
		if diff := cmp.Diff([]string{sum('b'), sum('d'), sum('f')}, b.keys()); diff != "" {
			t.Errorf("bucket after (-want +got):\n%s", diff)
		}
		want := maintenance.RetentionReport{Batches: 2, Runs: 1, Protected: 2, Objects: 3, Bytes: 55, Deferred: 1,
			Expired: []maintenance.Expiry{{BatchID: "expired", Reason: "age"}, {BatchID: "run", Reason: "keep_runs"}},
			Keys:    []string{sum('a'), attempt, sum('c')}}
		if diff := cmp.Diff(want, rep); diff != "" {
			t.Errorf("report (-want +got):\n%s", diff)
		}
		again, err := r.Run(context.Background(), false)
		if err != nil || again.Objects != 0 {
			t.Errorf("second pass: %d objects, %v; want none", again.Objects, err)
		}
	})
}

// keyRows lists keys in order, like the store.
type keyRows []string

func (k keyRows) ObjectKeysAfter(_ context.Context, after string, limit int) ([]string, error) {
	var out []string
	for _, key := range k {
		if key > after && len(out) < limit {
			out = append(out, key)
		}
	}
	return out, nil
}

func TestMaintenanceReportsMissingObjects(t *testing.T) {
	t.Parallel()
	b := &statBucket{sweepBucket{objs: map[string]time.Time{"a": {}, "c": {}}}}
	m := &maintenance.Maintenance{Missing: &maintenance.MissingCheck{Rows: keyRows{"a", "b", "c", "d"}, Objects: b, MaxKeys: 3}}
	var observed []maintenance.SweepReport
	m.Observe = func(r maintenance.SweepReport) { observed = append(observed, r) }
	rep, err := m.Pass(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if want := (maintenance.MissingReport{Checked: 3, Missing: 1, Keys: []string{"b"}}); !cmp.Equal(want, rep.Missing) {
		t.Errorf("first pass %+v, want %+v", rep.Missing, want)
	}
	rep, _ = m.Pass(context.Background(), true)
	if want := (maintenance.MissingReport{Checked: 1, Missing: 1, Keys: []string{"d"}, Wrapped: true}); !cmp.Equal(want, rep.Missing) {
		t.Errorf("second pass carries on: %+v, want %+v", rep.Missing, want)
	}
	if len(observed) != 2 {
		t.Errorf("Observe saw %d reports, want 2", len(observed))
	}
}

// failingStat fails every Stat with something other than not-found.
type failingStat struct{ statBucket }

func (failingStat) Stat(context.Context, string) (artifacts.Object, error) {
	return artifacts.Object{}, errors.New("storage unavailable")
}

func TestMaintenanceMissingCheckCallsNothingMissingOnErrors(t *testing.T) {
	t.Parallel()
	m := &maintenance.Maintenance{Missing: &maintenance.MissingCheck{Rows: keyRows{"a", "b"}, Objects: failingStat{}}}
	rep, err := m.Pass(context.Background(), false)
	if err == nil || rep.Missing.Missing != 0 || len(rep.Errors) != 1 {
		t.Errorf("missing %d, errors %v (%v); want 0 missing and the stat failure reported", rep.Missing.Missing, rep.Errors, err)
	}
}
