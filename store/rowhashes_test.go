package store_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/snapq/snapq/diff"
	"github.com/snapq/snapq/jobs"
)

// A segment's row hashes are stored with its artifact, read back by
// artifact id, and go when the job's artifacts are replaced.
func TestRowHashesFollowArtifacts(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	_, js := newBatch(t, st, 1)
	j, _, err := st.StartJob(ctx, js[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	blob := diff.EncodeRowHashes(2, []uint64{1, 2, 3}, []uint64{4, 5, 6})
	seg := &jobs.Artifact{ID: newTestID(t), JobID: j.ID, Kind: jobs.KindScreenshot, Name: "p-001.png", Seq: 1, ObjectKey: "k/1",
		ContentType: "image/png", Bytes: 1, Width: 2, Height: 3, SHA256: "x", RowHashes: blob}
	plain := &jobs.Artifact{ID: newTestID(t), JobID: j.ID, Kind: jobs.KindScreenshot, Name: "p-002.png", Seq: 2, ObjectKey: "k/2",
		ContentType: "image/png", Bytes: 1, Width: 2, Height: 3, SHA256: "y"}
	if ok, err := st.CompleteJob(ctx, j.ID, j.Attempts, &jobs.Result{}, []*jobs.Artifact{seg, plain}); !ok || err != nil {
		t.Fatalf("CompleteJob = %v, %v", ok, err)
	}
	got, err := st.RowHashes(ctx, []string{seg.ID, plain.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !bytes.Equal(got[seg.ID], blob) {
		t.Fatalf("row hashes %v, want the segment's blob alone", got)
	}
	if err := st.ExecForTest(ctx, `DELETE FROM artifacts WHERE id = $1`, seg.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := st.RowHashes(ctx, []string{seg.ID}); err != nil || len(got) != 0 {
		t.Fatalf("after the artifact's deletion: %v, %v; want none", got, err)
	}
}
