package regression

import (
	"context"
	"errors"
	"image"
	"image/color"
	"testing"

	"github.com/snapq/snapq/jobs"
)

// keyedRepo is a compareRepo that reads a run and its capture job together
// (store.Store's CaptureRun) and cannot look captures up (CaptureOf fails).
type keyedRepo struct {
	*compareRepo
	reads int
}

var errNoLookup = errors.New("CaptureOf is not available")

func (r *keyedRepo) CaptureOf(context.Context, string) (*Run, CaptureKey, error) {
	return nil, CaptureKey{}, errNoLookup
}

func (r *keyedRepo) CaptureRun(_ context.Context, runID, jobID string) (*Run, *jobs.Job, error) {
	r.reads++
	if runID != r.run.ID || jobID != r.job.ID {
		return nil, nil, jobs.ErrNotFound
	}
	return r.run, r.job, nil
}

// A compare task that carries its capture key is compared from it: the run
// and job are read in one call and the comparisons carry the key's target
// and viewport; a task without the key still looks the capture up.
func TestComparerUsesPayloadKey(t *testing.T) {
	t.Parallel()
	gray := color.NRGBA{240, 240, 240, 255}
	blobs := memBlobs{}
	job := &jobs.Job{ID: "j", BatchID: "b", Name: "home-100x80", Status: jobs.StatusSucceeded,
		Options: jobs.Options{Viewport: jobs.Viewport{Width: 100, Height: 80, DeviceScaleFactor: 1}}}
	cur := []*jobs.Artifact{pngArtifact(t, blobs, "home-100x80-001.png", 1, 100, 80, gray, image.Rectangle{}, gray)}
	base := &Baseline{ID: "b1", Segment: 1, Version: 1,
		Artifact: pngArtifact(t, blobs, "b1.png", 1, 100, 80, gray, image.Rectangle{}, gray)}
	repo := &keyedRepo{compareRepo: &compareRepo{run: &Run{ID: "r", SuiteID: "s", Spec: SuiteSpec{PixelThreshold: 0.1}},
		job: job, arts: cur, bases: []*Baseline{base}}}
	c := &Comparer{Repo: repo, Store: blobs, Logger: quiet}
	ctx := context.Background()
	p := compareOf("j", jobs.RunCaptureRef{RunID: "r", Target: "home", Viewport: "100x80", JobID: "j"})
	if err := c.Run(ctx, p); err != nil {
		t.Fatal(err)
	}
	if repo.reads != 1 || len(repo.recorded) != 1 {
		t.Fatalf("%d reads, %d comparisons; want 1 and 1", repo.reads, len(repo.recorded))
	}
	if got := repo.recorded[0]; got.Status != ComparePassed || got.Target != "home" || got.Viewport != "100x80" {
		t.Errorf("comparison %+v; want passed for home at 100x80", got)
	}
	if err := c.Run(ctx, ComparePayload{JobID: "j"}); !errors.Is(err, errNoLookup) {
		t.Errorf("a payload without its key: %v; want the lookup's error", err)
	}
	p.RunID = "gone"
	if err := c.Run(ctx, p); !errors.Is(err, jobs.ErrNoRetry) {
		t.Errorf("a run that is gone: %v; want it dropped without a retry", err)
	}
}
