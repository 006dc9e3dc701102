package regression

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/jobs"
)

// compareRepo is the Comparer's CompareStore, in memory.
type compareRepo struct {
	run      *Run
	key      CaptureKey
	job      *jobs.Job
	others   map[string]*jobs.Job // jobs that captured baselines
	arts     []*jobs.Artifact
	bases    []*Baseline
	versions []*Baseline // every version, for approval memory
	recorded []*Comparison
	diffs    []*jobs.Artifact
}

var _ CompareStore = (*compareRepo)(nil)

func (r *compareRepo) CaptureOf(context.Context, string) (*Run, CaptureKey, error) {
	return r.run, r.key, nil
}
func (r *compareRepo) GetJob(_ context.Context, id string) (*jobs.Job, error) {
	if j, ok := r.others[id]; ok {
		return j, nil
	}
	return r.job, nil
}
func (r *compareRepo) ListArtifacts(context.Context, string) ([]*jobs.Artifact, error) {
	return r.arts, nil
}
func (r *compareRepo) ActiveBaselines(context.Context, string, []string, CaptureKey) ([]*Baseline, error) {
	return r.bases, nil
}
func (r *compareRepo) BaselineVersions(context.Context, string, []string, CaptureKey) ([]*Baseline, error) {
	return r.versions, nil
}
func (r *compareRepo) RecordComparisons(_ context.Context, _, _ string, cs []*Comparison, diffs []*jobs.Artifact) (bool, error) {
	r.recorded, r.diffs = cs, diffs
	return false, nil
}

type memBlobs map[string][]byte

func (m memBlobs) Put(_ context.Context, key string, data []byte, _ string, _ artifacts.PutOptions) (artifacts.Object, error) {
	m[key] = data
	return artifacts.Object{Key: key, Bytes: int64(len(data))}, nil
}

func (m memBlobs) Get(_ context.Context, key string) ([]byte, artifacts.Object, error) {
	d, ok := m[key]
	if !ok {
		return nil, artifacts.Object{}, fmt.Errorf("no object %s", key)
	}
	return d, artifacts.Object{Key: key}, nil
}

// pngArtifact stores a w×h image filled with c (and a box of boxColor) and returns its artifact.
func pngArtifact(t *testing.T, blobs memBlobs, name string, seq, w, h int, c color.NRGBA, box image.Rectangle, boxColor color.NRGBA) *jobs.Artifact {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), &image.Uniform{c}, image.Point{}, draw.Src)
	draw.Draw(img, box, &image.Uniform{boxColor}, image.Point{}, draw.Src)
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	blobs["k/"+name] = buf.Bytes()
	return &jobs.Artifact{ID: name, Kind: jobs.KindScreenshot, Name: name, Seq: seq, ObjectKey: "k/" + name, Width: w, Height: h}
}

func TestComparerSegments(t *testing.T) {
	gray, red := color.NRGBA{240, 240, 240, 255}, color.NRGBA{200, 0, 0, 255}
	blobs := memBlobs{}
	none := image.Rectangle{}
	head := image.Rect(10, 10, 60, 30) // 1000 px
	job := &jobs.Job{ID: "j", BatchID: "b", Name: "home-100x80", Status: jobs.StatusSucceeded,
		Options: jobs.Options{Viewport: jobs.Viewport{Width: 100, Height: 80, DeviceScaleFactor: 1}}}
	cur := []*jobs.Artifact{
		pngArtifact(t, blobs, "home-100x80-001.png", 1, 100, 80, gray, head, red),  // heading now red
		pngArtifact(t, blobs, "home-100x80-002.png", 2, 100, 80, gray, none, gray), // unchanged
		pngArtifact(t, blobs, "home-100x80-003.png", 3, 100, 50, gray, none, gray), // shorter than before
		pngArtifact(t, blobs, "home-100x80-after.png", 4, 100, 80, red, none, red), // an action's shot: not a segment
		pngArtifact(t, blobs, "home-100x80-004.png", 5, 100, 80, gray, none, gray), // new
	}
	base := func(seg int, a *jobs.Artifact) *Baseline {
		return &Baseline{ID: fmt.Sprint("b", seg), Segment: seg, Version: 1, Artifact: a}
	}
	bases := []*Baseline{
		base(1, pngArtifact(t, blobs, "b1.png", 1, 100, 80, gray, head, color.NRGBA{30, 30, 30, 255})),
		base(2, pngArtifact(t, blobs, "b2.png", 2, 100, 80, gray, none, gray)),
		base(3, pngArtifact(t, blobs, "b3.png", 3, 100, 80, gray, none, gray)),
		base(6, pngArtifact(t, blobs, "b6.png", 6, 100, 80, gray, none, gray)),
	}
	repo := &compareRepo{run: &Run{ID: "r", SuiteID: "s", Spec: SuiteSpec{PixelThreshold: 0.1}}, key: CaptureKey{Target: "home", Viewport: "100x80"},
		job: job, arts: cur, bases: bases}
	c := &Comparer{Repo: repo, Store: blobs, Logger: quiet}
	if err := c.Compare(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	got := map[int]*Comparison{}
	for _, cmp := range repo.recorded {
		got[cmp.Segment] = cmp
	}
	want := map[int]CompareStatus{1: CompareFailed, 2: ComparePassed, 3: CompareFailed, 4: CompareNew, 6: CompareMissing}
	if len(got) != len(want) {
		t.Fatalf("%d comparisons, want %d: %+v", len(got), len(want), repo.recorded)
	}
	for seg, status := range want {
		if got[seg] == nil || got[seg].Status != status {
			t.Errorf("segment %d: %+v, want %s", seg, got[seg], status)
		}
	}
	if got[1].DiffPixels != int64(head.Dx()*head.Dy()) || got[1].DiffArtifact == nil || got[1].DiffArtifact.Kind != KindDiff {
		t.Errorf("segment 1: %d px, diff %+v", got[1].DiffPixels, got[1].DiffArtifact)
	}
	if !strings.Contains(got[3].Message, "size changed from 100x80 to 100x50") {
		t.Errorf("segment 3 message %q", got[3].Message)
	}
	if got[2].DiffArtifact != nil || got[2].DiffPixels != 0 {
		t.Errorf("unchanged segment has a diff: %+v", got[2])
	}
	if len(repo.diffs) != 2 { // segments 1 and 3 differ
		t.Errorf("%d diff images uploaded, want 2", len(repo.diffs))
	}

	// The heading masked by the capture's ignore-selector box: segment 1 passes.
	job.Result = &jobs.Result{Masks: []capture.Box{{X: 5, Y: 5, Width: 60, Height: 30}}}
	if err := c.Compare(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	if s := repo.recorded[0]; s.Segment != 1 || s.Status != ComparePassed {
		t.Errorf("masked heading: %+v", s)
	}

	// A failed capture is one error comparison carrying the job's error.
	job.Status, job.ErrorCode, job.ErrorMessage = jobs.StatusFailed, "dns_failure", "no such host"
	if err := c.Compare(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	if len(repo.recorded) != 1 || repo.recorded[0].Status != CompareError || repo.recorded[0].Message != "dns_failure: no such host" {
		t.Errorf("failed capture: %+v", repo.recorded)
	}
	// A suspect capture (quality verdict) is an error comparison too, never failed or new.
	job.Status, job.ErrorCode, job.ErrorMessage = jobs.StatusSucceeded, "", ""
	job.Result = &jobs.Result{Quality: &capture.Quality{Verdict: capture.VerdictSuspect, Reasons: []string{capture.ReasonBlank}}}
	if err := c.Compare(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	if len(repo.recorded) != 1 || repo.recorded[0].Status != CompareError || !strings.Contains(repo.recorded[0].Message, "suspect: blank") {
		t.Errorf("suspect capture: %+v", repo.recorded)
	}
}

// An ignored element that moved is masked where it is now and where it was in
// the baseline's capture.
func TestComparerMasksBothCaptures(t *testing.T) {
	blobs := memBlobs{}
	gray, dark := color.NRGBA{240, 240, 240, 255}, color.NRGBA{30, 30, 30, 255}
	then, now := image.Rect(10, 10, 40, 20), image.Rect(50, 40, 80, 50)
	cur := pngArtifact(t, blobs, "p.png", 1, 100, 80, gray, now, dark)
	old := pngArtifact(t, blobs, "b.png", 1, 100, 80, gray, then, dark)
	old.JobID = "baseline-job"
	box := func(r image.Rectangle) capture.Box {
		return capture.Box{X: r.Min.X, Y: r.Min.Y, Width: r.Dx(), Height: r.Dy()}
	}
	repo := &compareRepo{run: &Run{ID: "r", Spec: SuiteSpec{PixelThreshold: 0.1}}, key: CaptureKey{Target: "p", Viewport: "100x80"},
		job:    &jobs.Job{ID: "j", Name: "p", Status: jobs.StatusSucceeded, Result: &jobs.Result{Masks: []capture.Box{box(now)}}},
		others: map[string]*jobs.Job{"baseline-job": {ID: "baseline-job", Result: &jobs.Result{Masks: []capture.Box{box(then)}}}},
		arts:   []*jobs.Artifact{cur}, bases: []*Baseline{{ID: "x", Segment: 1, Artifact: old}}}
	c := &Comparer{Repo: repo, Store: blobs, Logger: quiet}
	if err := c.Compare(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	if got := repo.recorded[0]; got.Status != ComparePassed || got.DiffPixels != 0 {
		t.Fatalf("moved ignored element: %s, %d px", got.Status, got.DiffPixels)
	}
	// Without the baseline's boxes its old place shows as a change.
	repo.others["baseline-job"].Result = nil
	if err := c.Compare(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	if got := repo.recorded[0]; got.Status != CompareFailed || got.DiffPixels != int64(then.Dx()*then.Dy()) {
		t.Fatalf("baseline boxes unknown: %s, %d px; want failed with the old box's %d px", got.Status, got.DiffPixels, then.Dx()*then.Dy())
	}
}

// pixel_threshold 0 means exact: one level of gray is a change.
func TestComparerExactThreshold(t *testing.T) {
	blobs := memBlobs{}
	a := pngArtifact(t, blobs, "p.png", 1, 20, 20, color.NRGBA{100, 100, 100, 255}, image.Rectangle{}, color.NRGBA{})
	b := pngArtifact(t, blobs, "b.png", 1, 20, 20, color.NRGBA{101, 100, 100, 255}, image.Rectangle{}, color.NRGBA{})
	for _, tc := range []struct {
		pixel float64
		want  CompareStatus
	}{{0, CompareFailed}, {0.1, ComparePassed}} {
		repo := &compareRepo{run: &Run{ID: "r", Spec: SuiteSpec{PixelThreshold: tc.pixel}}, key: CaptureKey{Target: "p", Viewport: "20x20"},
			job: &jobs.Job{ID: "j", Name: "p", Status: jobs.StatusSucceeded}, arts: []*jobs.Artifact{a},
			bases: []*Baseline{{ID: "x", Segment: 1, Artifact: b}}}
		if err := (&Comparer{Repo: repo, Store: blobs, Logger: quiet}).Compare(context.Background(), "j"); err != nil {
			t.Fatal(err)
		}
		if got := repo.recorded[0].Status; got != tc.want {
			t.Errorf("pixel_threshold %v: %s, want %s", tc.pixel, got, tc.want)
		}
	}
}

var quiet = slog.New(slog.DiscardHandler)

// A screenshot action named "diff" (segments <job>-diff-001.png, …) keeps its
// images: the diff image of a changed segment takes a name no capture
// artifact can have, and the action's bytes stay in the bucket.
func TestComparerDiffNameAvoidsActionShots(t *testing.T) {
	blobs := memBlobs{}
	gray, red := color.NRGBA{240, 240, 240, 255}, color.NRGBA{200, 0, 0, 255}
	page := pngArtifact(t, blobs, "p-001.png", 1, 20, 20, gray, image.Rect(0, 0, 5, 5), red)
	shot := pngArtifact(t, blobs, "p-diff-001.png", 2, 20, 20, red, image.Rectangle{}, red) // the "diff" action's first segment
	base := pngArtifact(t, blobs, "b.png", 1, 20, 20, gray, image.Rectangle{}, gray)
	// The action's image lives where the worker put it, beside the job's other artifacts.
	shotBytes := blobs[shot.ObjectKey]
	shot.ObjectKey = artifacts.Key("batches", "b", "jobs", "j", shot.Name)
	blobs[shot.ObjectKey] = shotBytes
	for _, tt := range []struct {
		name     string
		arts     []*jobs.Artifact
		wantName string
	}{
		{name: "no action named diff keeps the usual name", arts: []*jobs.Artifact{page}, wantName: "p-diff-001.png"},
		{name: "an action named diff", arts: []*jobs.Artifact{page, shot}, wantName: "p-001-diff.png"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			blobs[shot.ObjectKey] = shotBytes
			repo := &compareRepo{run: &Run{ID: "r", Spec: SuiteSpec{PixelThreshold: 0.1}}, key: CaptureKey{Target: "p", Viewport: "20x20"},
				job: &jobs.Job{ID: "j", BatchID: "b", Name: "p", Status: jobs.StatusSucceeded}, arts: tt.arts,
				bases: []*Baseline{{ID: "x", Segment: 1, Artifact: base}}}
			if err := (&Comparer{Repo: repo, Store: blobs, Logger: quiet}).Compare(context.Background(), "j"); err != nil {
				t.Fatal(err)
			}
			if len(repo.diffs) != 1 {
				t.Fatalf("%d diff images, want 1", len(repo.diffs))
			}
			d := repo.diffs[0]
			if d.Name != tt.wantName {
				t.Errorf("diff image named %q, want %q", d.Name, tt.wantName)
			}
			for _, a := range tt.arts {
				if a.Name == d.Name {
					t.Errorf("diff image %q has the name of the job's %s artifact", d.Name, a.Kind)
				}
			}
			if slices.Contains(tt.arts, shot) && !bytes.Equal(blobs[shot.ObjectKey], shotBytes) {
				t.Error("the diff image overwrote the action's screenshot in the bucket")
			}
		})
	}
}

// Approval memory: a current image with the sha256 of an earlier approved
// version of its baseline passes and names that version; the same change
// on another target gets the same group key; the target's band
// auto-approves a small change.
func TestComparerApprovalMemoryAndGroups(t *testing.T) {
	blobs := memBlobs{}
	gray, blue, red := color.NRGBA{240, 240, 240, 255}, color.NRGBA{30, 60, 200, 255}, color.NRGBA{200, 0, 0, 255}
	head := image.Rect(10, 10, 60, 30)
	compare := func(target string, spec SuiteSpec, cur *jobs.Artifact, active *Baseline, versions ...*Baseline) *Comparison {
		t.Helper()
		repo := &compareRepo{run: &Run{ID: "r", SuiteID: "s", Spec: spec}, key: CaptureKey{Target: target, Viewport: "100x80"},
			job:  &jobs.Job{ID: "j", Name: "p", Status: jobs.StatusSucceeded, Options: jobs.Options{Viewport: jobs.Viewport{Width: 100, Height: 80}}},
			arts: []*jobs.Artifact{cur}, bases: []*Baseline{active}, versions: versions}
		c := &Comparer{Repo: repo, Store: blobs, Logger: quiet, SkipThumbnails: true}
		if err := c.Compare(context.Background(), "j"); err != nil {
			t.Fatal(err)
		}
		if len(repo.recorded) != 1 {
			t.Fatalf("%d comparisons", len(repo.recorded))
		}
		return repo.recorded[0]
	}
	spec := SuiteSpec{PixelThreshold: 0.1, Targets: []SuiteTarget{{Name: "a"}, {Name: "b"}}}
	a := pngArtifact(t, blobs, "a.png", 1, 100, 80, gray, head, blue)
	b := pngArtifact(t, blobs, "b.png", 1, 100, 80, gray, head, red)
	a.SHA256, b.SHA256 = "sha-a", "sha-b"
	shot := *a // the capture's own artifact (named after its job), holding image a
	shot.ID, shot.Name = "shot", "p.png"
	v1 := &Baseline{ID: "v1", Segment: 1, Version: 1, Artifact: a, ApprovedBy: "key:1"}
	v2 := &Baseline{ID: "v2", Segment: 1, Version: 2, Artifact: b, ApprovedBy: "key:1"}

	got := compare("a", spec, &shot, v2, v2, v1)
	if got.Status != ComparePassed || got.MatchesPrevious == nil || *got.MatchesPrevious != (PreviousMatch{BaselineID: "v1", Version: 1}) ||
		!strings.Contains(got.Message, "identical to baseline version 1") || got.GroupKey == "" {
		t.Fatalf("back to version 1: %+v", got)
	}
	// Without that history it fails; another target's same change has the same key.
	failed := compare("b", spec, &shot, v2, v2)
	if failed.Status != CompareFailed || failed.MatchesPrevious != nil || failed.GroupKey != got.GroupKey {
		t.Fatalf("no history: %+v; want failed with group key %s", failed, got.GroupKey)
	}
	// A target whose band is above the change's ratio (1000 / 8000 px) passes it, auto-approved.
	spec.Targets[1].AutoApproveBelow = ptrTo(0.2)
	auto := compare("b", spec, &shot, v2, v2)
	if auto.Status != ComparePassed || !auto.AutoApproved || !strings.Contains(auto.Message, "auto-approved") {
		t.Fatalf("auto-approve band: %+v", auto)
	}
	if other := compare("a", spec, &shot, v2, v2); other.Status != CompareFailed || other.AutoApproved {
		t.Fatalf("the band is target b's only: %+v", other)
	}
}

func ptrTo[T any](v T) *T { return &v }
