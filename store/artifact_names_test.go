package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/jobs"
)

// Two artifacts of one job with one name are refused with a classified
// error, not an anonymous constraint violation.
func TestCompleteJobDuplicateArtifactName(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	_, js := newBatch(t, st, 1)
	j, _, err := st.StartJob(ctx, js[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	art := func(kind string) *jobs.Artifact {
		return &jobs.Artifact{ID: newTestID(t), JobID: j.ID, Kind: kind, Name: "p.md", Seq: 1, ObjectKey: "k/" + kind,
			ContentType: "text/markdown", Bytes: 1, SHA256: "x"}
	}
	ok, err := st.CompleteJob(ctx, j.ID, j.Attempts, &jobs.Result{}, []*jobs.Artifact{art(capture.FileDownload), art(capture.OutputMarkdown)})
	if ok || !errors.Is(err, jobs.ErrArtifactNameTaken) {
		t.Fatalf("CompleteJob with two p.md = %v, %v; want ErrArtifactNameTaken", ok, err)
	}
}

// A capture that gives two files one name fails the job at once with
// artifact_name_conflict (no retry, nothing uploaded), instead of failing
// every attempt until the queue gives up (worker_lost).
func TestHandlerDuplicateArtifactName(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	_, js := newBatch(t, st, 1)
	blobs := &putRecorder{}
	h := &jobs.Handler{Repo: st, Store: blobs, Renderer: renderFiles{
		{Kind: capture.FileDownload, Name: js[0].Name + ".md", ContentType: "text/markdown", Data: []byte("# a")},
		{Kind: capture.OutputMarkdown, Name: js[0].Name + ".md", ContentType: "text/markdown", Data: []byte("# a")},
	}}
	err := h.Process(ctx, js[0].ID, false)
	if !errors.Is(err, jobs.ErrNoRetry) {
		t.Fatalf("Process = %v; want a failure not to retry", err)
	}
	got, err := st.GetJob(ctx, js[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != jobs.StatusFailed || got.ErrorCode != jobs.CodeArtifactNameConflict {
		t.Fatalf("job %s %s: %s; want failed with %s", got.Status, got.ErrorCode, got.ErrorMessage, jobs.CodeArtifactNameConflict)
	}
	if len(blobs.keys) != 0 {
		t.Errorf("uploaded %v before refusing the names", blobs.keys)
	}
}

type renderFiles []capture.File

func (r renderFiles) Capture(context.Context, capture.Request) (*capture.Result, error) {
	return &capture.Result{HTTPStatus: 200, Files: r}, nil
}

type putRecorder struct{ keys []string }

func (p *putRecorder) Put(_ context.Context, key string, data []byte, _ string, _ artifacts.PutOptions) (artifacts.Object, error) {
	p.keys = append(p.keys, key)
	return artifacts.Object{Key: key, Bytes: int64(len(data))}, nil
}
