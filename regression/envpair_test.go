package regression

import (
	"context"
	"image/color"
	"testing"

	"github.com/snapq/snapq/jobs"
)

// pairRepo is a pair run's store: two jobs with their own artifacts; no
// baseline may be read.
type pairRepo struct {
	t        *testing.T
	run      *Run
	key      CaptureKey
	jobs     map[string]*jobs.Job
	arts     map[string][]*jobs.Artifact
	recorded map[string][]*Comparison
}

func (r *pairRepo) CaptureOf(context.Context, string) (*Run, CaptureKey, error) {
	return r.run, r.key, nil
}
func (r *pairRepo) GetJob(_ context.Context, id string) (*jobs.Job, error) {
	if j, ok := r.jobs[id]; ok {
		return j, nil
	}
	return nil, jobs.ErrNotFound
}
func (r *pairRepo) ListArtifacts(_ context.Context, id string) ([]*jobs.Artifact, error) {
	return r.arts[id], nil
}
func (r *pairRepo) ActiveBaselines(context.Context, string, []string, CaptureKey) ([]*Baseline, error) {
	r.t.Error("a pair run read baselines")
	return nil, nil
}
func (r *pairRepo) RecordComparisons(_ context.Context, _, jobID string, cs []*Comparison, _ []*jobs.Artifact) (bool, error) {
	r.recorded[jobID] = cs
	return false, nil
}

// A pair's comparison waits for both captures, is recorded under the run's
// own capture whichever capture's task runs it, diffs segment by segment
// with the reference capture, and is an error when the reference failed.
func TestComparerEnvironmentPair(t *testing.T) {
	blobs := memBlobs{}
	page := inkedPage(100, 160, 1)
	changed := inkedPage(100, 160, 1)
	for y := 100; y < 120; y++ {
		for x := 10; x < 60; x++ {
			changed.SetNRGBA(x, y, color.NRGBA{200, 30, 30, 255})
		}
	}
	cur := segmentsJob()
	ref := segmentsJob()
	ref.ID, ref.Name = "ref", "home-100x80"+ReferenceSuffix
	ref.Status = jobs.StatusRunning
	repo := &pairRepo{t: t, run: &Run{ID: "r", SuiteID: "s", CompareTo: "http://127.0.0.1:2", Spec: SuiteSpec{PixelThreshold: 0.1}},
		key:  CaptureKey{Target: "home", Viewport: "100x80", JobID: "j", ReferenceJobID: "ref"},
		jobs: map[string]*jobs.Job{"j": cur, "ref": ref},
		arts: map[string][]*jobs.Artifact{"j": segmentArtifacts(t, blobs, "home-100x80", page, 80),
			"ref": segmentArtifacts(t, blobs, "home-100x80.reference", changed, 80)},
		recorded: map[string][]*Comparison{}}
	for id, as := range repo.arts {
		for _, a := range as {
			a.JobID = id
		}
	}
	c := &Comparer{Repo: repo, Store: blobs, Logger: quiet}
	ctx := context.Background()
	if err := c.Compare(ctx, "j"); err != nil || len(repo.recorded) != 0 {
		t.Fatalf("compare before the reference is final: %v, recorded %v; want nothing", err, repo.recorded)
	}
	ref.Status = jobs.StatusSucceeded
	if err := c.Compare(ctx, "ref"); err != nil {
		t.Fatal(err)
	}
	got := bySegment(repo.recorded["j"])
	if len(repo.recorded) != 1 || len(got) != 2 || got[1].Status != ComparePassed || got[2].Status != CompareFailed ||
		got[2].BaselineArtifact == nil || got[2].BaselineArtifact.Name != "home-100x80.reference-002.png" || got[2].BaselineID != "" {
		t.Fatalf("pair comparisons %+v; want segment 1 passed, 2 failed against the reference's segment 2", repo.recorded)
	}

	ref.Status, ref.ErrorCode, ref.ErrorMessage = jobs.StatusFailed, "dns_failure", "no such host"
	if err := c.Compare(ctx, "j"); err != nil {
		t.Fatal(err)
	}
	if cs := repo.recorded["j"]; len(cs) != 1 || cs[0].Status != CompareError || cs[0].Message == "" {
		t.Fatalf("reference failed: %+v; want one error naming it", cs)
	}
}

// BaselineVersions: a pair run reads no baselines.
func (r *pairRepo) BaselineVersions(context.Context, string, []string, CaptureKey) ([]*Baseline, error) {
	r.t.Error("a pair run read baseline versions")
	return nil, nil
}
