package regression

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/jobs"
)

// inkedPage draws a w×h page of random "text" lines (12 px high, 20 px apart)
// on white: nearly every inked row is unique.
func inkedPage(w, h int, seed uint64) *image.NRGBA {
	rng := rand.New(rand.NewPCG(seed, 1))
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	for y := range h {
		if y%20 < 4 || y%20 >= 16 {
			continue
		}
		for x := 4; x < w-4; x++ {
			if rng.IntN(4) == 0 {
				v := byte(rng.IntN(120))
				img.SetNRGBA(x, y, color.NRGBA{v, v, v, 255})
			}
		}
	}
	return img
}

// insertRows returns page with n rows of colour c inserted at y.
func insertRows(page *image.NRGBA, y, n int, c color.NRGBA) *image.NRGBA {
	w, h := page.Rect.Dx(), page.Rect.Dy()
	out := image.NewNRGBA(image.Rect(0, 0, w, h+n))
	copy(out.Pix, page.Pix[:y*page.Stride])
	for yy := y; yy < y+n; yy++ {
		for x := range w {
			out.SetNRGBA(x, yy, c)
		}
	}
	copy(out.Pix[(y+n)*out.Stride:], page.Pix[y*page.Stride:])
	return out
}

// segmentArtifacts stores page cut into seg px segments named prefix-NNN.png.
func segmentArtifacts(t *testing.T, blobs memBlobs, prefix string, page *image.NRGBA, seg int) []*jobs.Artifact {
	t.Helper()
	var out []*jobs.Artifact
	for i, y := 0, 0; y < page.Rect.Dy(); i, y = i+1, y+seg {
		sub := page.SubImage(image.Rect(0, y, page.Rect.Dx(), min(y+seg, page.Rect.Dy())))
		var buf bytes.Buffer
		if err := png.Encode(&buf, sub); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%s-%03d.png", prefix, i+1)
		blobs["k/"+name] = buf.Bytes()
		out = append(out, &jobs.Artifact{ID: "a-" + name, Kind: jobs.KindScreenshot, Name: name, Seq: i + 1,
			ObjectKey: "k/" + name, Width: sub.Bounds().Dx(), Height: sub.Bounds().Dy()})
	}
	return out
}

func baselinesOf(arts []*jobs.Artifact) []*Baseline {
	var out []*Baseline
	for i, a := range arts {
		out = append(out, &Baseline{ID: fmt.Sprint("b", i+1), Segment: i + 1, Version: 1, Artifact: a})
	}
	return out
}

func segmentsJob() *jobs.Job {
	return &jobs.Job{ID: "j", BatchID: "b", Name: "home-100x80", Status: jobs.StatusSucceeded,
		Options: jobs.Options{Viewport: jobs.Viewport{Width: 100, Height: 80, DeviceScaleFactor: 1},
			Screenshot: jobs.Screenshot{Mode: capture.ModeSegments}}}
}

func bySegment(cs []*Comparison) map[int]*Comparison {
	m := map[int]*Comparison{}
	for _, c := range cs {
		m[c.Segment] = c
	}
	return m
}

// A 12 px block inserted at y = 50 of a ten-segment page: segment 1 fails
// with one inserted change, every segment below passes shifted (the page's
// new 11th segment too, matched with baseline content); pixel mode fails
// them all.
func TestComparerAlignedInsertedBlock(t *testing.T) {
	blobs := memBlobs{}
	base := inkedPage(100, 800, 1)
	cur := insertRows(base, 50, 12, color.NRGBA{30, 90, 200, 255})
	bases := baselinesOf(segmentArtifacts(t, blobs, "base", base, 80))
	repo := &compareRepo{run: &Run{ID: "r", SuiteID: "s", Spec: SuiteSpec{PixelThreshold: 0.1}}, key: CaptureKey{Target: "home", Viewport: "100x80"},
		job: segmentsJob(), arts: segmentArtifacts(t, blobs, "home-100x80", cur, 80), bases: bases}
	c := &Comparer{Repo: repo, Store: blobs, Logger: quiet}
	if err := c.Compare(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	got := bySegment(repo.recorded)
	if len(got) != 11 {
		t.Fatalf("%d comparisons, want 11", len(got))
	}
	s1 := got[1]
	if s1.Status != CompareFailed || s1.DiffMode != DiffAligned || len(s1.Hunks) != 1 || s1.Hunks[0].B0 != 50 || s1.Hunks[0].B1 != 62 ||
		!strings.Contains(s1.Message, "+12 px inserted at y=50") || s1.DiffArtifact == nil {
		t.Fatalf("segment 1: %+v", s1)
	}
	for seg := 2; seg <= 11; seg++ {
		if g := got[seg]; g.Status != ComparePassed || g.ShiftedPx != 12 || g.Message != "unchanged, shifted +12 px" || g.DiffArtifact != nil {
			t.Fatalf("segment %d: %+v", seg, g)
		}
	}
	if len(repo.diffs) != 1 {
		t.Fatalf("%d diff images, want 1", len(repo.diffs))
	}

	repo.run.Spec.Diff.Mode = DiffPixel
	if err := c.Compare(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	got = bySegment(repo.recorded)
	for seg := 1; seg <= 10; seg++ {
		if g := got[seg]; g.Status != CompareFailed || g.DiffMode != DiffPixel {
			t.Fatalf("pixel mode segment %d: %s %q", seg, g.Status, g.Message)
		}
	}
	if got[11].Status != CompareNew {
		t.Fatalf("pixel mode segment 11: %s", got[11].Status)
	}
}

// The proof: segment 7 was approved with new content and has an
// ignore rectangle over a clock; when content above moves down 120 px, the
// approved content still passes and the rectangle still hides the clock.
func TestComparerAlignedApprovalAndIgnoreFollowContent(t *testing.T) {
	blobs := memBlobs{}
	page := inkedPage(100, 800, 2)
	// Segment 7 (rows 480-560) as approved: a red badge.
	for y := 500; y < 512; y++ {
		for x := 60; x < 90; x++ {
			page.SetNRGBA(x, y, color.NRGBA{220, 0, 0, 255})
		}
	}
	baseArts := segmentArtifacts(t, blobs, "base", page, 80)
	bases := baselinesOf(baseArts)
	bases[6].Version = 2 // the approval
	clock := Rect{X: 10, Y: 525, Width: 40, Height: 10}
	cur := insertRows(page, 100, 120, color.NRGBA{250, 200, 0, 255})
	for y := clock.Y + 120; y < clock.Y+clock.Height+120; y++ { // the clock ticked
		for x := clock.X; x < clock.X+clock.Width; x++ {
			cur.SetNRGBA(x, y, color.NRGBA{0, 0, 0, 255})
		}
	}
	spec := SuiteSpec{PixelThreshold: 0.1, Ignore: Ignore{Rects: []Rect{clock}}}
	repo := &compareRepo{run: &Run{ID: "r", SuiteID: "s", Spec: spec}, key: CaptureKey{Target: "home", Viewport: "100x80"},
		job: segmentsJob(), arts: segmentArtifacts(t, blobs, "home-100x80", cur, 80), bases: bases}
	c := &Comparer{Repo: repo, Store: blobs, Logger: quiet}
	if err := c.Compare(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	got := bySegment(repo.recorded)
	// Segments 2 and 3 hold the inserted rows; every later one only moved.
	for seg := 4; seg <= len(got); seg++ {
		if g := got[seg]; g.Status != ComparePassed || g.ShiftedPx != 120 {
			t.Fatalf("segment %d: %s %q shifted %d", seg, g.Status, g.Message, g.ShiftedPx)
		}
	}
	// Without the rectangle the clock's change is found where it is now.
	repo.run.Spec.Ignore.Rects = nil
	if err := c.Compare(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	clockSeg := (clock.Y+120)/80 + 1
	if g := bySegment(repo.recorded)[clockSeg]; g.Status != CompareFailed {
		t.Fatalf("unmasked clock, segment %d: %s %q", clockSeg, g.Status, g.Message)
	}
}

// A page whose segments all have their baseline's bytes passes without an
// image being read.
func TestComparerAlignedUnchangedBytes(t *testing.T) {
	blobs := memBlobs{}
	page := inkedPage(100, 200, 3)
	cur := segmentArtifacts(t, blobs, "home-100x80", page, 80)
	base := segmentArtifacts(t, blobs, "base", page, 80)
	for i := range cur {
		cur[i].SHA256, base[i].SHA256 = fmt.Sprint("sum", i), fmt.Sprint("sum", i)
		delete(blobs, cur[i].ObjectKey) // reading an image would fail
	}
	repo := &compareRepo{run: &Run{ID: "r", SuiteID: "s", Spec: SuiteSpec{PixelThreshold: 0.1}}, key: CaptureKey{Target: "home", Viewport: "100x80"},
		job: segmentsJob(), arts: cur, bases: baselinesOf(base)}
	if err := (&Comparer{Repo: repo, Store: blobs, Logger: quiet}).Compare(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	for _, c := range repo.recorded {
		if c.Status != ComparePassed || c.DiffMode != DiffAligned || c.BaselineArtifact == nil {
			t.Fatalf("segment %d: %+v", c.Segment, c)
		}
	}
	if len(repo.recorded) != 3 {
		t.Fatalf("%d comparisons, want 3", len(repo.recorded))
	}
}

// An insertion within the threshold passes but says so.
func TestComparerAlignedInsertionWithinThreshold(t *testing.T) {
	blobs := memBlobs{}
	base := inkedPage(100, 800, 4)
	cur := insertRows(base, 50, 2, color.NRGBA{30, 90, 200, 255})
	repo := &compareRepo{run: &Run{ID: "r", SuiteID: "s", Spec: SuiteSpec{PixelThreshold: 0.1, Threshold: 0.05}}, key: CaptureKey{Target: "home", Viewport: "100x80"},
		job: segmentsJob(), arts: segmentArtifacts(t, blobs, "home-100x80", cur, 80), bases: baselinesOf(segmentArtifacts(t, blobs, "base", base, 80))}
	if err := (&Comparer{Repo: repo, Store: blobs, Logger: quiet}).Compare(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	if s1 := bySegment(repo.recorded)[1]; s1.Status != ComparePassed || !strings.Contains(s1.Message, "+2 px inserted at y=50") ||
		!strings.Contains(s1.Message, "<=") {
		t.Fatalf("segment 1: %s %q", s1.Status, s1.Message)
	}
}

// An ignored element (a selector's boxes, measured in each capture) that
// moved down with everything below an insertion and changed is masked in
// both pages: only the insertion fails.
func TestComparerAlignedSelectorMasks(t *testing.T) {
	blobs := memBlobs{}
	base := inkedPage(100, 800, 5)
	clock := image.Rect(10, 400, 60, 412) // baseline page coordinates
	cur := insertRows(base, 50, 20, color.NRGBA{30, 90, 200, 255})
	for y := clock.Min.Y + 20; y < clock.Max.Y+20; y++ {
		for x := clock.Min.X; x < clock.Max.X; x++ {
			cur.SetNRGBA(x, y, color.NRGBA{0, 0, 0, 255})
		}
	}
	baseArts := segmentArtifacts(t, blobs, "base", base, 80)
	for _, a := range baseArts {
		a.JobID = "baseline-job"
	}
	box := func(r image.Rectangle) capture.Box {
		return capture.Box{X: r.Min.X, Y: r.Min.Y, Width: r.Dx(), Height: r.Dy()}
	}
	job := segmentsJob()
	job.Result = &jobs.Result{Masks: []capture.Box{box(clock.Add(image.Pt(0, 20)))}}
	repo := &compareRepo{run: &Run{ID: "r", SuiteID: "s", Spec: SuiteSpec{PixelThreshold: 0.1}}, key: CaptureKey{Target: "home", Viewport: "100x80"},
		job: job, arts: segmentArtifacts(t, blobs, "home-100x80", cur, 80), bases: baselinesOf(baseArts),
		others: map[string]*jobs.Job{"baseline-job": {ID: "baseline-job", Result: &jobs.Result{Masks: []capture.Box{box(clock)}}}}}
	if err := (&Comparer{Repo: repo, Store: blobs, Logger: quiet}).Compare(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	for _, c := range repo.recorded {
		want := ComparePassed
		if c.Segment == 1 {
			want = CompareFailed
		}
		if c.Status != want {
			t.Fatalf("segment %d: %s %q, want %s", c.Segment, c.Status, c.Message, want)
		}
	}
	// Without the boxes the clock's change fails its segment.
	job.Result = nil
	repo.others["baseline-job"].Result = nil
	if err := (&Comparer{Repo: repo, Store: blobs, Logger: quiet}).Compare(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	if c := bySegment(repo.recorded)[(clock.Min.Y+20)/80+1]; c.Status != CompareFailed {
		t.Fatalf("unmasked clock: %s %q", c.Status, c.Message)
	}
}
