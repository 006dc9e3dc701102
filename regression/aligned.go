package regression

import (
	"context"
	"fmt"
	"image"
	"strings"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/diff"
	"github.com/snapq/snapq/jobs"
)

// alignedPage is the aligned comparison of a capture's final page with the
// baseline page as a whole (diff.ComparePages): each current segment gets a
// comparison whose content is matched wherever it moved, and each baseline
// segment past the current page's end one saying whether its content went.
type alignedPage struct {
	*comparison
	page    []*Baseline      // the active baselines 1..K with an image, in order
	curTree *capture.BoxTree // the capture's box tree, nil when it recorded none
	opts    diff.PageOptions // the masks of both pages
	res     *diff.PageResult
	ex      *alignedExplain // nil without curTree
	cs      []*Comparison
	diffs   []*jobs.Artifact
}

// aligned runs the aligned comparison's phases. ok is false when the page
// cannot be compared this way (no baselines, baselines with gaps, an image
// that cannot be read, widths that differ): the caller then compares segment
// by segment, which reports those cases.
func (k *comparison) aligned() (cs []*Comparison, diffs []*jobs.Artifact, ok bool) {
	a := &alignedPage{comparison: k}
	if !a.baselines() {
		return nil, nil, false
	}
	if cs, ok := unchangedPage(k.run, k.shots, a.page); ok {
		return cs, nil, true
	}
	a.masks()
	if !a.diffPages() {
		return nil, nil, false
	}
	if k.c.Decoded != nil {
		defer func() { k.c.Decoded(a.res.Decoded()) }() // with the diff images' decodes
	}
	if a.curTree != nil {
		a.ex = newAlignedExplain(a.res, a.curTree, k.rules, k.scale)
	}
	for i := range a.res.Segments {
		a.segment(i)
	}
	for j := len(k.shots); j < len(a.page); j++ {
		a.cs = append(a.cs, a.gone(j))
	}
	return a.cs, a.diffs, true
}

// baselines keeps the active baselines with an image, in order; false
// unless they are segments 1..K without a gap.
func (a *alignedPage) baselines() bool {
	for _, b := range a.bases {
		if b.Artifact != nil {
			a.page = append(a.page, b)
		}
	}
	if len(a.page) == 0 {
		return false
	}
	sortBaselines(a.page)
	for i, b := range a.page {
		if b.Segment != i+1 {
			return false
		}
	}
	return true
}

// masks sets what each page ignores. The suite's rectangles are anchored to
// the baseline's content; the current capture's selector boxes are where
// those elements are now. The suite's rules (ruleSetFor) apply when the
// capture recorded its box tree.
func (a *alignedPage) masks() {
	if a.job.Result != nil && a.job.Result.Elements != nil {
		a.curTree = a.job.Result.Elements
	}
	maskA := append(a.baselineMask(), maskFor(a.run.Spec.Ignore.Rects, a.scale, 0)...)
	maskB := maskFor(append(ignoreRects(nil, a.job.Result), ignoreBoxes(a.rules, a.curTree)...), a.scale, 0)
	// A page capped at max_segments (now or when the baseline's last segment
	// was taken) ends at the cap, not at its end.
	open := a.job.Result != nil && a.job.Result.Segments.Truncated
	if r := a.c.baselineResult(a.ctx, a.page[len(a.page)-1], a.seen); r != nil && r.Segments.Truncated {
		open = true
	}
	a.opts = diff.PageOptions{Options: diffOptions(a.run.Spec), MaskA: maskA, MaskB: maskB, OpenEnded: open}
}

// baselineMask is the ignored elements' boxes (the suite's selectors and
// ignore_element rules) of the job that captured each baseline segment, kept
// to the segment's rows (another job laid out another page).
func (a *alignedPage) baselineMask() []image.Rectangle {
	var mask []image.Rectangle
	offA := 0
	for _, b := range a.page {
		h := b.Artifact.Height
		rows := image.Rect(0, offA, 1<<30, offA+h)
		r := a.c.baselineResult(a.ctx, b, a.seen)
		rects := ignoreRects(nil, r)
		if r != nil && len(a.rules.list()) > 0 {
			rects = append(rects, ignoreBoxes(a.rules, r.Elements)...)
		}
		for _, m := range maskFor(rects, a.scale, 0) {
			if m = m.Intersect(rows); !m.Empty() {
				mask = append(mask, m)
			}
		}
		offA += h
	}
	return mask
}

// diffPages aligns and diffs the two pages, from the segments' manifests
// when they have them, decoded otherwise; false when neither can.
func (a *alignedPage) diffPages() bool {
	baseArts := make([]*jobs.Artifact, len(a.page))
	for i, b := range a.page {
		baseArts[i] = b.Artifact
	}
	var err error
	segsA, segsB, ok := a.c.manifests(a.ctx, baseArts, a.shots)
	if ok {
		a.res, err = diff.ComparePageSegments(segsA, segsB, a.opts)
		if err != nil {
			a.c.logger().Info("aligned comparison from the manifests not possible; decoding the segments", "job_id", a.job.ID, "err", err)
		}
	}
	if !ok || err != nil {
		if a.res, err = a.c.comparePagesDecoded(a.ctx, baseArts, a.shots, a.opts); err != nil {
			a.c.logger().Info("aligned comparison not possible; comparing segment by segment", "job_id", a.job.ID, "err", err)
			return false
		}
	}
	a.c.logger().Debug("aligned comparison", "job_id", a.job.ID, "from_manifests", ok, "decoded_segments", a.res.Decoded(),
		"segments", len(a.page)+len(a.shots))
	return true
}

// segment compares current segment i: explain, judge, upload.
func (a *alignedPage) segment(i int) {
	s := a.res.Segments[i]
	cmp := &Comparison{Segment: i + 1, CurrentArtifact: a.shots[i], Threshold: a.run.Spec.Threshold,
		DiffMode: DiffAligned, ShiftedPx: s.Shift, Hunks: hunksIn(a.res, i), DiffPixels: int64(s.DiffPixels), DiffRatio: s.Ratio}
	base := (*Baseline)(nil)
	if i < len(a.page) {
		base = a.page[i]
	} else if s.From >= 0 {
		base = a.page[s.From] // the baseline segment its content comes from
	}
	paired := s.Y1 - s.Y0 - s.Inserted
	isNew := base == nil || (i >= len(a.page) && paired == 0)
	var img *image.NRGBA
	var imgErr error
	if !isNew && s.DiffPixels > 0 {
		img, imgErr = a.explain(i, cmp, &s)
	}
	judgeAligned(cmp, s, isNew)
	if base != nil && cmp.Status != CompareNew {
		cmp.BaselineID, cmp.BaselineArtifact = base.ID, base.Artifact
	}
	if cmp.Status != CompareNew && s.DiffPixels > 0 {
		a.upload(i, cmp, s, img, imgErr)
	}
	a.cs = append(a.cs, cmp)
}

// explain renders segment i's diff image and explains it by the elements
// (alignedchanges.go); what the rules suppress no longer counts in s and
// cmp.
func (a *alignedPage) explain(i int, cmp *Comparison, s *diff.SegmentResult) (*image.NRGBA, error) {
	img, err := a.res.RenderSegmentDiff(i)
	if err != nil || a.ex == nil {
		return img, err
	}
	var n int
	cmp.Changes, n = a.ex.segment(i, img, a.c.alignedBaseTree(a.ctx, a.page, *s, i, a.seen))
	cmp.MaskedRegions = a.rules.maskedRegions(cmp.Changes)
	if n > 0 {
		s.DiffPixels = max(0, s.DiffPixels-n)
		if area := a.res.Width * (s.Y1 - s.Y0); area > 0 {
			s.Ratio = min(1, float64(s.DiffPixels)/float64(area))
		}
		cmp.DiffPixels, cmp.DiffRatio = int64(s.DiffPixels), s.Ratio
	}
	return img, nil
}

// judgeAligned sets the status and message of an aligned segment's
// comparison.
func judgeAligned(cmp *Comparison, s diff.SegmentResult, isNew bool) {
	switch {
	case isNew:
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
}

// upload stores segment i's diff image img (or records err, the failure to
// render it, as the comparison's error).
func (a *alignedPage) upload(i int, cmp *Comparison, s diff.SegmentResult, img *image.NRGBA, err error) {
	var d *jobs.Artifact
	if err == nil {
		d, err = a.uploadSegment(i, cmp, s, img)
	}
	if err != nil {
		cmp.Status, cmp.Message = CompareError, err.Error()
		return
	}
	a.diffs = append(a.diffs, d)
}

// uploadSegment groups and uploads segment i's diff image. The baseline's
// pixels are compared in place only where the segment's content did not
// move; otherwise the marks and the current pixels make the group key.
func (a *alignedPage) uploadSegment(i int, cmp *Comparison, s diff.SegmentResult, img *image.NRGBA) (*jobs.Artifact, error) {
	var baseImg image.Image
	curImg, err := a.res.SegmentImage(true, i)
	if err == nil && s.Shift == 0 && s.Inserted == 0 && s.Removed == 0 && i < len(a.page) {
		baseImg, err = a.res.SegmentImage(false, i)
	}
	if err != nil {
		return nil, err
	}
	cmp.GroupKey = GroupKey(img, curImg, baseImg)
	return a.c.uploadDiff(a.ctx, a.job, cmp, img, diffName(a.job.Name, i+1, a.taken))
}

// gone is the comparison of baseline segment j past the current page's end:
// missing when its content went, passed when it moved into the page.
func (a *alignedPage) gone(j int) *Comparison {
	m := a.res.SegmentsA[j]
	cmp := &Comparison{Segment: j + 1, Threshold: a.run.Spec.Threshold, DiffMode: DiffAligned,
		BaselineID: a.page[j].ID, BaselineArtifact: a.page[j].Artifact, ShiftedPx: m.Shift}
	if m.Removed > 0 || m.Segment < 0 {
		cmp.Status, cmp.Message = CompareMissing, "the page no longer has this segment"
		if m.Removed > 0 && m.Removed < m.Y1-m.Y0 {
			cmp.Message = fmt.Sprintf("the page no longer has this segment (%d of its %d px rows removed)", m.Removed, m.Y1-m.Y0)
		}
	} else {
		cmp.Status = ComparePassed
		cmp.Message = fmt.Sprintf("unchanged, shifted %+d px into segment %d", m.Shift, m.Segment+1)
	}
	return cmp
}

// alignedBaseTree is the box tree of the job that captured the baseline
// segment current segment i's content comes from (or the i-th), nil when
// it has none.
func (c *Comparer) alignedBaseTree(ctx context.Context, page []*Baseline, s diff.SegmentResult, i int, seen map[string]*jobs.Result) *capture.BoxTree {
	j := s.From
	if j < 0 || j >= len(page) {
		j = min(i, len(page)-1)
	}
	if r := c.baselineResult(ctx, page[j], seen); r != nil {
		return r.Elements
	}
	return nil
}

// manifests describes both pages by their segments' recorded row hashes,
// each segment decoded only when the comparison asks (c.image); ok is false
// when a segment has none (captured before manifests, or not a PNG) or they
// cannot be read: the pages are then decoded whole.
func (c *Comparer) manifests(ctx context.Context, base, cur []*jobs.Artifact) ([]diff.PageSegment, []diff.PageSegment, bool) {
	rr, ok := c.Repo.(RowHashReader)
	if !ok {
		return nil, nil, false
	}
	ids := make([]string, 0, len(base)+len(cur))
	for _, a := range append(append([]*jobs.Artifact(nil), base...), cur...) {
		ids = append(ids, a.ID)
	}
	blobs, err := rr.RowHashes(ctx, ids)
	if err != nil {
		c.logger().Warn("read the segments' row hashes; decoding them instead", "err", err)
		return nil, nil, false
	}
	side := func(arts []*jobs.Artifact) ([]diff.PageSegment, bool) {
		out := make([]diff.PageSegment, len(arts))
		for i, a := range arts {
			blob, ok := blobs[a.ID]
			if !ok {
				return nil, false
			}
			w, sigs, exact, err := diff.DecodeRowHashes(blob)
			if err != nil || w != a.Width || len(sigs) != a.Height {
				return nil, false
			}
			out[i] = diff.PageSegment{Width: w, Height: a.Height, Sigs: sigs, Exact: exact,
				Load: func() (image.Image, error) { return c.image(ctx, a) }}
		}
		return out, true
	}
	a, okA := side(base)
	b, okB := side(cur)
	return a, b, okA && okB
}

// comparePagesDecoded is the aligned comparison of pages without manifests:
// every segment decoded, its row signatures computed.
func (c *Comparer) comparePagesDecoded(ctx context.Context, base, cur []*jobs.Artifact, opts diff.PageOptions) (*diff.PageResult, error) {
	decode := func(arts []*jobs.Artifact) ([]image.Image, error) {
		out := make([]image.Image, len(arts))
		for i, a := range arts {
			img, err := c.image(ctx, a)
			if err != nil {
				return nil, err
			}
			if h := img.Bounds().Dy(); h != a.Height { // the masks were placed by the recorded heights
				return nil, fmt.Errorf("%s is %d px tall, its artifact says %d", a.Name, h, a.Height)
			}
			out[i] = img
		}
		return out, nil
	}
	a, err := decode(base)
	if err != nil {
		return nil, err
	}
	b, err := decode(cur)
	if err != nil {
		return nil, err
	}
	return diff.ComparePages(a, b, opts)
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
