package regression

import (
	"context"
	"fmt"
	"image"
	"strings"

	"github.com/snapq/snapq/diff"
	"github.com/snapq/snapq/jobs"
)

// compareAligned compares the capture's page with the baseline page as a
// whole (diff.ComparePages): each current segment gets a comparison whose
// content is matched wherever it moved, and each baseline segment past the
// current page's end one saying whether its content went. ok is false when
// the page cannot be compared this way (no baselines, baselines with gaps,
// an image that cannot be read, widths that differ): the caller then
// compares segment by segment, which reports those cases.
func (c *Comparer) compareAligned(ctx context.Context, run *Run, job *jobs.Job, shots []*jobs.Artifact, bases []*Baseline,
	taken map[string]bool, scale float64) ([]*Comparison, []*jobs.Artifact, bool) {
	var page []*Baseline // active baselines 1..K with an image, in order
	for _, b := range bases {
		if b.Artifact != nil {
			page = append(page, b)
		}
	}
	if len(page) == 0 {
		return nil, nil, false
	}
	sortBaselines(page)
	for i, b := range page {
		if b.Segment != i+1 {
			return nil, nil, false
		}
	}
	if cs, ok := unchangedPage(run, shots, page); ok {
		return cs, nil, true
	}
	curImgs := make([]image.Image, len(shots))
	for i, a := range shots {
		img, err := c.image(ctx, a)
		if err != nil {
			return nil, nil, false
		}
		curImgs[i] = img
	}
	baseImgs := make([]image.Image, len(page))
	offA := 0
	seen := map[string]*jobs.Result{}
	var maskA []image.Rectangle
	for i, b := range page {
		img, err := c.image(ctx, b.Artifact)
		if err != nil {
			return nil, nil, false
		}
		baseImgs[i] = img
		// The ignored elements' boxes of the job that captured this segment,
		// kept to the segment's rows (another job laid out another page).
		h := img.Bounds().Dy()
		rows := image.Rect(0, offA, 1<<30, offA+h)
		for _, m := range maskFor(ignoreRects(nil, c.baselineResult(ctx, b, seen)), scale, 0) {
			if m = m.Intersect(rows); !m.Empty() {
				maskA = append(maskA, m)
			}
		}
		offA += h
	}
	// The suite's rectangles are anchored to the baseline's content; the
	// current capture's selector boxes are where those elements are now.
	maskA = append(maskA, maskFor(run.Spec.Ignore.Rects, scale, 0)...)
	maskB := maskFor(ignoreRects(nil, job.Result), scale, 0)
	// A page capped at max_segments (now or when the baseline's last segment
	// was taken) ends at the cap, not at its end.
	open := job.Result != nil && job.Result.Segments.Truncated
	if r := c.baselineResult(ctx, page[len(page)-1], seen); r != nil && r.Segments.Truncated {
		open = true
	}
	res, err := diff.ComparePages(baseImgs, curImgs, diff.PageOptions{Options: diffOptions(run.Spec), MaskA: maskA, MaskB: maskB,
		OpenEnded: open})
	if err != nil {
		c.logger().Info("aligned comparison not possible; comparing segment by segment", "job_id", job.ID, "err", err)
		return nil, nil, false
	}

	var cs []*Comparison
	var diffs []*jobs.Artifact
	for i, s := range res.Segments {
		seg := i + 1
		cmp := &Comparison{Segment: seg, CurrentArtifact: shots[i], Threshold: run.Spec.Threshold,
			DiffMode: DiffAligned, ShiftedPx: s.Shift, Hunks: hunksIn(res, i), DiffPixels: int64(s.DiffPixels), DiffRatio: s.Ratio}
		base := (*Baseline)(nil)
		if i < len(page) {
			base = page[i]
		} else if s.From >= 0 {
			base = page[s.From] // the baseline segment its content comes from
		}
		paired := s.Y1 - s.Y0 - s.Inserted
		switch {
		case base == nil || (i >= len(page) && paired == 0):
			cmp.Status, cmp.Message = CompareNew, "no approved baseline yet"
			cmp.DiffPixels, cmp.DiffRatio = 0, 0
		case s.Ratio <= cmp.Threshold:
			cmp.Status = ComparePassed
			switch {
			case s.Inserted > 0 || s.Removed > 0: // within the threshold
				cmp.Message = describe(cmp.Hunks, s, cmp.Threshold)
			case s.Shift != 0:
				cmp.Message = fmt.Sprintf("unchanged, shifted %+d px", s.Shift)
			}
		default:
			cmp.Status = CompareFailed
			cmp.Message = describe(cmp.Hunks, s, cmp.Threshold)
		}
		if base != nil && cmp.Status != CompareNew {
			cmp.BaselineID, cmp.BaselineArtifact = base.ID, base.Artifact
		}
		if cmp.Status != CompareNew && s.DiffPixels > 0 {
			img := res.SegmentDiff(i)
			// The baseline's pixels are compared in place only where the
			// segment's content did not move; otherwise the marks and the
			// current pixels make the key.
			var baseImg image.Image
			if s.Shift == 0 && s.Inserted == 0 && s.Removed == 0 && i < len(baseImgs) {
				baseImg = baseImgs[i]
			}
			cmp.GroupKey = GroupKey(img, curImgs[i], baseImg)
			d, err := c.uploadDiff(ctx, job, cmp, img, diffName(job.Name, seg, taken))
			if err != nil {
				cmp.Status, cmp.Message = CompareError, err.Error()
			} else {
				diffs = append(diffs, d)
			}
		}
		cs = append(cs, cmp)
	}
	for j := len(shots); j < len(page); j++ {
		m := res.SegmentsA[j]
		cmp := &Comparison{Segment: j + 1, Threshold: run.Spec.Threshold, DiffMode: DiffAligned,
			BaselineID: page[j].ID, BaselineArtifact: page[j].Artifact, ShiftedPx: m.Shift}
		if m.Removed > 0 || m.Segment < 0 {
			cmp.Status, cmp.Message = CompareMissing, "the page no longer has this segment"
			if m.Removed > 0 && m.Removed < m.Y1-m.Y0 {
				cmp.Message = fmt.Sprintf("the page no longer has this segment (%d of its %d px rows removed)", m.Removed, m.Y1-m.Y0)
			}
		} else {
			cmp.Status = ComparePassed
			cmp.Message = fmt.Sprintf("unchanged, shifted %+d px into segment %d", m.Shift, m.Segment+1)
		}
		cs = append(cs, cmp)
	}
	return cs, diffs, true
}

// unchangedPage recognises a page whose every segment has the bytes of its
// baseline (same count, same sha256): it passes without decoding an image.
func unchangedPage(run *Run, shots []*jobs.Artifact, page []*Baseline) ([]*Comparison, bool) {
	if len(shots) != len(page) {
		return nil, false
	}
	for i, a := range shots {
		if a.SHA256 == "" || a.SHA256 != page[i].Artifact.SHA256 {
			return nil, false
		}
	}
	cs := make([]*Comparison, len(shots))
	for i, a := range shots {
		cs[i] = &Comparison{Segment: i + 1, Status: ComparePassed, CurrentArtifact: a, Threshold: run.Spec.Threshold,
			DiffMode: DiffAligned, BaselineID: page[i].ID, BaselineArtifact: page[i].Artifact}
	}
	return cs, true
}

// sortBaselines orders baselines by segment.
func sortBaselines(bs []*Baseline) {
	for i := 1; i < len(bs); i++ {
		for j := i; j > 0 && bs[j].Segment < bs[j-1].Segment; j-- {
			bs[j], bs[j-1] = bs[j-1], bs[j]
		}
	}
}

// hunksIn lists the page's non-equal hunks touching current segment i (a
// removal where the segment now holds the removal point).
func hunksIn(res *diff.PageResult, i int) []diff.Hunk {
	s := res.Segments[i]
	last := i == len(res.Segments)-1
	out := []diff.Hunk{}
	for _, h := range res.Hunks {
		switch {
		case h.Kind == diff.HunkEqual:
		case h.B0 == h.B1:
			if (h.B0 >= s.Y0 && h.B0 < s.Y1) || (last && h.B0 == s.Y1) {
				out = append(out, h)
			}
		case h.B0 < s.Y1 && h.B1 > s.Y0:
			out = append(out, h)
		}
	}
	return out
}

// describe says what failed a segment: its hunks (at most three), then the
// pixel count.
func describe(hs []diff.Hunk, s diff.SegmentResult, threshold float64) string {
	var parts []string
	for i, h := range hs {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("%d more changes", len(hs)-3))
			break
		}
		switch h.Kind {
		case diff.HunkInserted:
			parts = append(parts, fmt.Sprintf("+%d px inserted at y=%d", h.B1-h.B0, h.B0))
		case diff.HunkRemoved:
			parts = append(parts, fmt.Sprintf("-%d px removed at y=%d", h.A1-h.A0, h.B0))
		case diff.HunkChanged:
			parts = append(parts, fmt.Sprintf("rows y=%d-%d changed (were y=%d-%d)", h.B0, h.B1, h.A0, h.A1))
		}
	}
	cmp := ">"
	if s.Ratio <= threshold {
		cmp = "<="
	}
	parts = append(parts, fmt.Sprintf("%d pixels differ (%.4f%% %s %.4f%%)", s.DiffPixels, s.Ratio*100, cmp, threshold*100))
	if s.Shift != 0 {
		parts = append(parts, fmt.Sprintf("content shifted %+d px", s.Shift))
	}
	return strings.Join(parts, "; ")
}
