package regression

import (
	"image"
	"math"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/diff"
)

// Attribution in aligned mode: a current segment's diff image is clustered
// and explained as in pixel mode (changes.go), against the current capture's
// box tree and the baseline's moved into the current page through the
// alignment (alignedTree): an element that moved only because content above
// it was inserted or removed is where it was, and only a move relative to its
// content is a move. Inserted rows are explained by the elements inside them
// (added), removed rows by the baseline's elements that were inside them
// (removed), each, without such an element, by one change of the rows.

// maxHunkElements bounds the elements one inserted or removed hunk names;
// past it the hunk is one change of its rows.
const maxHunkElements = 20

// alignedExplain explains the segments of one aligned comparison.
type alignedExplain struct {
	res   *diff.PageResult
	cur   *capture.BoxTree
	rules *ruleSet
	scale float64
	moved map[*capture.BoxTree]*capture.BoxTree // baseline trees in current coordinates
}

func newAlignedExplain(res *diff.PageResult, cur *capture.BoxTree, rules *ruleSet, scale float64) *alignedExplain {
	if scale <= 0 {
		scale = 1
	}
	return &alignedExplain{res: res, cur: cur, rules: rules, scale: scale, moved: map[*capture.BoxTree]*capture.BoxTree{}}
}

// alignedTree is t, a box tree of the first page (CSS px), with every box
// moved into the second page through the alignment's hunks (image px =
// CSS px × scale).
func alignedTree(t *capture.BoxTree, hunks []diff.Hunk, scale float64) *capture.BoxTree {
	if t == nil {
		return nil
	}
	out := &capture.BoxTree{Elements: make([]capture.Element, len(t.Elements)), Truncated: t.Truncated}
	for i, e := range t.Elements {
		top, bottom := int(float64(e.Y)*scale), int(math.Ceil(float64(e.Y+e.Height)*scale))
		mt, mb := diff.MapSpan(hunks, top, bottom)
		e.Y += int(math.Round(float64(mt-top) / scale))
		bot := t.Elements[i].Y + t.Elements[i].Height + int(math.Round(float64(mb-bottom)/scale))
		e.Height = max(0, bot-e.Y)
		out.Elements[i] = e
	}
	return out
}

// segment explains current segment i of the comparison, its diff image
// img: the changes, and how many of the image's differing pixels the rules
// suppressed (repainted as masked in img: they do not count).
func (a *alignedExplain) segment(i int, img *image.NRGBA, base *capture.BoxTree) ([]Change, int) {
	if a.cur == nil || img == nil {
		return nil, 0
	}
	s := a.res.Segments[i]
	mb, ok := a.moved[base]
	if !ok {
		mb = alignedTree(base, a.res.Hunks, a.scale)
		a.moved[base] = mb
	}
	var changes []Change
	if clusters := clusterDiff(img); len(clusters) > 0 {
		changes = attribute(mb, a.cur, clusters, a.scale, s.Y0)
	}
	changes = append(changes, a.hunkChanges(i, base)...)
	if len(changes) == 0 {
		return nil, 0
	}
	n := 0
	for _, r := range applyRules(a.rules, changes, mb, a.cur) {
		n += unmarkDiff(img, r)
	}
	return changes, n
}

// hunkChanges explains the inserted rows of segment i and the rows removed
// at a point in it.
func (a *alignedExplain) hunkChanges(i int, base *capture.BoxTree) []Change {
	s := a.res.Segments[i]
	f := frame{a.scale, s.Y0}
	var out []Change
	for _, h := range hunksIn(a.res, i) {
		n := 0
		if h.Kind == diff.HunkChanged { // its paired rows are the clusters'
			n = min(h.A1-h.A0, h.B1-h.B0)
		}
		if b0, b1 := h.B0+n, h.B1; b1 > b0 {
			rows := image.Rect(0, max(b0, s.Y0)-s.Y0, a.res.Width, min(b1, s.Y1)-s.Y0)
			if rows.Empty() {
				continue // the part of the hunk in another segment
			}
			els := inside(a.cur, b0, b1, a.scale)
			for _, e := range els {
				r := f.rect(&a.cur.Elements[e]).Intersect(rows)
				if r.Empty() {
					continue
				}
				el := &a.cur.Elements[e]
				out = append(out, Change{Kind: ChangeAdded, Selector: el.Selector, Tag: el.Tag, Box: rectOf(r),
					After: stateOf(el, f), Ancestry: ancestry(a.cur, e), node: e})
			}
			if len(els) == 0 {
				out = append(out, Change{Kind: ChangeAdded, Box: rectOf(rows), node: -1})
			}
		}
		if a0, a1 := h.A0+n, h.A1; a1 > a0 {
			y := min(max(h.B0+n-s.Y0, 0), s.Y1-s.Y0-1)
			els := inside(base, a0, a1, a.scale)
			for _, e := range els {
				el := &base.Elements[e]
				// Where it was, moved to the removal point.
				st := stateOf(el, frame{a.scale, int(float64(el.Y)*a.scale) - y})
				out = append(out, Change{Kind: ChangeRemoved, Selector: el.Selector, Tag: el.Tag,
					Box: Rect{X: st.Box.X, Y: y, Width: st.Box.Width, Height: 1}, Before: st, Ancestry: ancestry(base, e), node: -1})
			}
			if len(els) == 0 {
				out = append(out, Change{Kind: ChangeRemoved, Box: Rect{Y: y, Width: a.res.Width, Height: 1}, node: -1})
			}
		}
	}
	return out
}

// inside returns the outermost elements of t (page CSS px) that lie in page
// rows [y0, y1) (image px): at least half of each element's rows, the
// alignment being free to place a hunk's edges anywhere in rows of one
// colour. Nil when there are more than maxHunkElements.
func inside(t *capture.BoxTree, y0, y1 int, scale float64) []int {
	if t == nil {
		return nil
	}
	in := make([]bool, len(t.Elements))
	var out []int
	f := frame{scale, 0}
	for i := range t.Elements {
		r := f.rect(&t.Elements[i])
		h := r.Dy()
		if h <= 0 || r.Dx() <= 0 {
			continue
		}
		if ov := min(r.Max.Y, y1) - max(r.Min.Y, y0); 2*ov < h {
			continue
		}
		in[i] = true
		outer := true
		for p, n := t.Elements[i].Parent, 0; p >= 0 && p < i && n < maxAncestry; p, n = t.Elements[p].Parent, n+1 {
			if in[p] {
				outer = false
				break
			}
		}
		if outer {
			if out = append(out, i); len(out) > maxHunkElements {
				return nil
			}
		}
	}
	return out
}

// unmarkDiff repaints the differing pixels of img inside r as masked and
// returns how many it repainted.
func unmarkDiff(img *image.NRGBA, r image.Rectangle) int {
	r = r.Intersect(img.Bounds())
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if diffRed(img, x, y) {
				i := img.PixOffset(x, y)
				img.Pix[i], img.Pix[i+1], img.Pix[i+2] = 0, 96, 255 // diff's masked colour
				n++
			}
		}
	}
	return n
}
