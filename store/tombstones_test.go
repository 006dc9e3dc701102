package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/maintenance"
	"github.com/snapq/snapq/store"
)

// Deletion and reuse of one object, interleaved (issue 25, Low: retention
// and the content sweep were check-then-act): a reuse committed while the
// deleter checks keeps the object (the deleter waits for its lock, then sees
// the row); a reuse after the deleter marked the object is refused
// (ErrObjectGone, no row names it); an upload of the bytes afresh is the
// new object and commits. Not parallel: it sets the store's test hook.
func TestDeleteAndReuseInterleaved(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	complete := func(j *jobs.Job, key string, reused bool) error {
		t.Helper()
		if _, _, err := st.StartJob(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
		a := &jobs.Artifact{ID: jobs.NewID(), JobID: j.ID, Kind: "screenshot", Name: "a.png", Seq: 1, ObjectKey: key,
			ContentType: "image/png", Bytes: 10, SHA256: "x", Reused: reused}
		var attempts int
		if err := st.QueryRowForTest(ctx, `SELECT attempts FROM jobs WHERE id = $1`, j.ID).Scan(&attempts); err != nil {
			t.Fatal(err)
		}
		_, err := st.CompleteJob(ctx, j.ID, attempts, &jobs.Result{}, []*jobs.Artifact{a})
		return err
	}
	expired := func(key string) *jobs.Batch {
		t.Helper()
		b, js := newBatch(t, st, 1)
		if err := complete(js[0], key, false); err != nil {
			t.Fatal(err)
		}
		return b
	}
	names := func(key string) int {
		t.Helper()
		var n int
		if err := st.QueryRowForTest(ctx, `SELECT count(*) FROM artifacts WHERE object_key = $1`, key).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// 1. The reuse holds its lock while the deleter checks: the deleter waits, then keeps the object.
	k1 := "content/sha256/ab/" + jobs.NewID()
	old := expired(k1)
	_, reuser := newBatch(t, st, 1)
	locked, release := make(chan struct{}), make(chan struct{})
	store.SetTombstoneHookForTest(func() { close(locked); <-release })
	reused := make(chan error, 1)
	go func() { reused <- complete(reuser[0], k1, true) }()
	<-locked
	store.SetTombstoneHookForTest(nil)
	deleted := make(chan maintenance.BatchDeletion, 1)
	go func() {
		del, err := st.DeleteBatchRows(ctx, old.ID, false)
		if err != nil {
			t.Error(err)
		}
		deleted <- del
	}()
	waitFor(t, "the deleter to wait for the key's lock", func() bool {
		var n int
		_ = st.QueryRowForTest(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`).Scan(&n)
		return n > 0
	})
	close(release)
	if err := <-reused; err != nil {
		t.Fatalf("the reuse that went first: %v", err)
	}
	if del := <-deleted; !del.Deleted || len(del.Objects) != 0 {
		t.Errorf("deletion %+v: the object a reuse now names was given for deletion", del)
	}

	// 2. The deleter marked the object first: the reuse is refused and names nothing.
	k2 := "content/sha256/ab/" + jobs.NewID()
	old = expired(k2)
	del, err := st.DeleteBatchRows(ctx, old.ID, false)
	if err != nil || len(del.Objects) != 1 || del.Objects[0].Key != k2 {
		t.Fatalf("deletion %+v, %v; want %s", del, err, k2)
	}
	_, late := newBatch(t, st, 1)
	if err := complete(late[0], k2, true); !errors.Is(err, jobs.ErrObjectGone) {
		t.Fatalf("a reuse of a marked object: err %v, want ErrObjectGone", err)
	}
	if n := names(k2); n != 0 {
		t.Errorf("%d rows name the object being deleted", n)
	}
	// Deleted, it stays refused for reuse (a reuse that began before the delete)…
	if err := st.FinishObjectDeletion(ctx, []string{k2}, nil); err != nil {
		t.Fatal(err)
	}
	_, later := newBatch(t, st, 1)
	if err := complete(later[0], k2, true); !errors.Is(err, jobs.ErrObjectGone) {
		t.Errorf("a reuse of a deleted object: err %v, want ErrObjectGone", err)
	}
	// …while bytes uploaded afresh are the object again.
	if err := complete(later[0], k2, false); err != nil {
		t.Fatalf("a fresh upload: %v", err)
	}
	_, again := newBatch(t, st, 1)
	if err := complete(again[0], k2, true); err != nil || names(k2) != 2 {
		t.Errorf("a reuse after the fresh upload: %v, %d rows", err, names(k2))
	}

	// 3. The sweep's marking: a referenced key is not marked; a kept one is unmarked.
	free := "content/sha256/ab/" + jobs.NewID()
	marked, err := st.MarkUnreferenced(ctx, []string{k2, free})
	if err != nil || marked[k2] || !marked[free] {
		t.Fatalf("MarkUnreferenced = %v, %v; want only %s", marked, err, free)
	}
	if err := st.FinishObjectDeletion(ctx, nil, []string{free}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := st.QueryRowForTest(ctx, `SELECT count(*) FROM object_tombstones WHERE object_key = $1`, free).Scan(&n); err != nil || n != 0 {
		t.Errorf("a kept object's mark: %d, %v", n, err)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
