package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/maintenance"
	"github.com/snapq/snapq/store"
)

// Retention's rows in Postgres: a back-dated batch with a running job is a
// candidate but active, and DeleteBatchRows keeps it; a back-dated final one
// goes (a dry run rolls back); a key's own 0 days keeps its batch; an object
// key another batch's row names is not returned for deletion.
func TestRetentionRows(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	backdate := func(id string) {
		t.Helper()
		if err := st.ExecForTest(ctx, `UPDATE batches SET created_at = now() - interval '3 days' WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
	}
	finish := func(j *jobs.Job, keys ...string) {
		t.Helper()
		if _, _, err := st.StartJob(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
		var arts []*jobs.Artifact
		for i, k := range keys {
			arts = append(arts, &jobs.Artifact{ID: jobs.NewID(), JobID: j.ID, Kind: "screenshot", Name: string(rune('a'+i)) + ".png",
				Seq: i + 1, ObjectKey: k, ContentType: "image/png", Bytes: 10, SHA256: "x"})
		}
		if ok, err := st.CompleteJob(ctx, j.ID, 1, &jobs.Result{}, arts); !ok || err != nil {
			t.Fatalf("CompleteJob = %v, %v", ok, err)
		}
	}
	busy, busyJobs := newBatch(t, st, 2)
	finish(busyJobs[0], "content/sha256/aa/busy")
	if _, _, err := st.StartJob(ctx, busyJobs[1].ID); err != nil { // still running
		t.Fatal(err)
	}
	done, doneJobs := newBatch(t, st, 1)
	finish(doneJobs[0], "content/sha256/aa/only-done", "content/sha256/aa/shared")
	other, otherJobs := newBatch(t, st, 1)
	finish(otherJobs[0], "content/sha256/aa/shared")
	keyed, keyedJobs := newBatch(t, st, 1)
	finish(keyedJobs[0], "content/sha256/aa/keyed")
	young, youngJobs := newBatch(t, st, 1)
	finish(youngJobs[0], "content/sha256/aa/young")
	for _, b := range []*jobs.Batch{busy, done, keyed} {
		backdate(b.ID)
	}
	key := jobs.NewID()
	if err := st.ExecForTest(ctx, `INSERT INTO api_keys (id, name, prefix, sha256) VALUES ($1, 'k', 'sq_x', $2)`, key, "sha-"+key); err != nil {
		t.Fatal(err)
	}
	if err := st.ExecForTest(ctx, `UPDATE batches SET api_key_id = $1 WHERE id = $2`, key, keyed.ID); err != nil {
		t.Fatal(err)
	}
	if err := st.SetKeyRetention(ctx, key, new(int)); err != nil { // 0: keep forever
		t.Fatal(err)
	}

	cands, err := st.RetentionCandidates(ctx, time.Now(), 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]maintenance.RetentionCandidate{}
	for _, c := range cands {
		got[c.BatchID] = c
	}
	if len(got) != 2 || !got[busy.ID].Active || got[done.ID].Active || got[done.ID].Protected {
		t.Fatalf("candidates %+v; want the busy (active) and the done batch only (not %s, %s, %s)", cands, keyed.ID, young.ID, other.ID)
	}
	expired, kept := maintenance.SelectExpired(cands, 1, time.Now())
	if len(expired) != 1 || expired[0].BatchID != done.ID || kept != 1 {
		t.Errorf("SelectExpired: %v, kept %d; want the done batch, the busy one kept", expired, kept)
	}

	if del, err := st.DeleteBatchRows(ctx, busy.ID, false); err != nil || del.Deleted {
		t.Errorf("DeleteBatchRows(busy) = %+v, %v; want kept", del, err)
	}
	dry, err := st.DeleteBatchRows(ctx, done.ID, true)
	if err != nil || !dry.Deleted || len(dry.Objects) != 1 || dry.Objects[0].Key != "content/sha256/aa/only-done" {
		t.Fatalf("dry run: %+v, %v; want only-done (shared is another batch's too)", dry, err)
	}
	if _, err := st.GetBatch(ctx, done.ID); err != nil {
		t.Fatalf("the dry run deleted the batch: %v", err)
	}
	del, err := st.DeleteBatchRows(ctx, done.ID, false)
	if err != nil || !del.Deleted || len(del.Objects) != 1 {
		t.Fatalf("DeleteBatchRows(done) = %+v, %v", del, err)
	}
	if _, err := st.GetBatch(ctx, done.ID); err != jobs.ErrNotFound {
		t.Errorf("GetBatch after deletion: %v, want ErrNotFound", err)
	}
	if del, err := st.DeleteBatchRows(ctx, done.ID, false); err != nil || del.Deleted {
		t.Errorf("deleting again: %+v, %v; want nothing", del, err)
	}
	keys, err := st.ObjectKeysAfter(ctx, "content/sha256/aa/b", 10)
	if err != nil || len(keys) != 4 || keys[0] != "content/sha256/aa/busy" {
		t.Errorf("ObjectKeysAfter = %v, %v; want busy, keyed, shared, young", keys, err)
	}
	ok1, err1 := st.ClaimSweepSlot(ctx, time.Unix(1_900_000_000, 0))
	ok2, err2 := st.ClaimSweepSlot(ctx, time.Unix(1_900_000_000, 0))
	if !ok1 || ok2 || err1 != nil || err2 != nil {
		t.Errorf("claims of one slot: %v %v (%v, %v); want the first only", ok1, ok2, err1, err2)
	}
}

var _ = store.Open
