package regression

import (
	"fmt"
	"image"
	"sort"

	"github.com/snapq/snapq/capture"
)

// Attribution: each cluster of changed pixels (cluster.go) is explained by
// the smallest element, of the baseline's or the current capture's box tree
// (capture/boxtree.go), that covers most of it and did change: its text, its
// position, its styles, its presence or its image. Elements are paired across
// the two trees by their stable selector (the n-th element of a selector with
// the n-th). A cluster no changed element covers is unattributed.

// Change kinds.
const (
	ChangeText         = "text_changed"
	ChangeStyle        = "style_changed"
	ChangeMoved        = "moved"
	ChangeAdded        = "added"
	ChangeRemoved      = "removed"
	ChangeImage        = "image_changed"
	ChangeUnattributed = "unattributed"
	ChangeFrame        = "frame_changed"
)

// minCoverage is the share of a cluster an element must cover to explain it.
const minCoverage = 0.5

// maxAncestry bounds the ancestors a change records for rule matching.
const maxAncestry = 40

// Change is one explained difference of a comparison. Boxes are in the
// segment image's pixels; DX and DY in CSS pixels.
type Change struct {
	Kind     string `json:"kind"`
	Selector string `json:"selector,omitempty"`
	Tag      string `json:"tag,omitempty"`
	// Box holds the changed pixels the change explains.
	Box        Rect          `json:"box"`
	Before     *ElementState `json:"before,omitempty"`
	After      *ElementState `json:"after,omitempty"`
	Properties []string      `json:"properties,omitempty"`
	DX         int           `json:"dx,omitempty"`
	DY         int           `json:"dy,omitempty"`
	// SuppressedBy is the id of the rule that suppressed the change: its
	// pixels did not count.
	SuppressedBy string `json:"suppressed_by,omitempty"`
	// Ancestry is the element and its recorded ancestors, root first, what a
	// rule's selector is matched against.
	Ancestry []Node `json:"ancestry,omitempty"`

	node int // index in the current tree, -1 when only the baseline has it
}

// ElementState is an element as one capture saw it.
type ElementState struct {
	Box Rect `json:"box"`
	// Container is the box of the element's parent (nil: none recorded): a
	// dynamic_text rule holds while it stays put (rules.go).
	Container *Rect             `json:"container,omitempty"`
	Text      string            `json:"text,omitempty"`
	Style     map[string]string `json:"style,omitempty"`
}

// Node is an element as a selector sees it.
type Node struct {
	Tag      string `json:"t"`
	ID       string `json:"id,omitempty"`
	Classes  string `json:"c,omitempty"`
	TestID   string `json:"d,omitempty"`
	Role     string `json:"r,omitempty"`
	Name     string `json:"n,omitempty"`
	Selector string `json:"s,omitempty"`
	Path     string `json:"pa,omitempty"`
}

// pairing indexes a box tree by pairing key (selector and occurrence).
type pairing struct {
	t     *capture.BoxTree
	keys  []string
	byKey map[string]int
}

func pairTree(t *capture.BoxTree) *pairing {
	p := &pairing{t: t, byKey: map[string]int{}}
	if t == nil {
		return p
	}
	seen := map[string]int{}
	p.keys = make([]string, len(t.Elements))
	for i, e := range t.Elements {
		n := seen[e.Selector]
		seen[e.Selector] = n + 1
		k := e.Selector
		if n > 0 {
			k += fmt.Sprintf("\x00%d", n)
		}
		p.keys[i] = k
		p.byKey[k] = i
	}
	return p
}

// pathOf is an element's CSS path: Path, or its selector when that is one.
func pathOf(e *capture.Element) string {
	if e.Path != "" {
		return e.Path
	}
	return e.Selector
}

// pairByPath pairs the elements left unpaired by selector (a role name
// taken from a text that changed) by CSS path and tag; it returns, per
// current index, the baseline index.
func pairByPath(bp, cp *pairing) map[int]int {
	out := map[int]int{}
	if bp.t == nil || cp.t == nil {
		return out
	}
	left := map[string]int{}
	for i, e := range bp.t.Elements {
		if _, ok := cp.byKey[bp.keys[i]]; !ok {
			left[pathOf(&e)+"\x00"+e.Tag] = i
		}
	}
	for i, e := range cp.t.Elements {
		if _, ok := bp.byKey[cp.keys[i]]; ok {
			continue
		}
		k := pathOf(&e) + "\x00" + e.Tag
		if b, ok := left[k]; ok {
			out[i] = b
			delete(left, k)
		}
	}
	return out
}

func (p *pairing) elem(i int) *capture.Element {
	if i < 0 {
		return nil
	}
	return &p.t.Elements[i]
}

// frame converts page CSS pixels to a segment's image pixels.
type frame struct {
	scale   float64
	offsetY int
}

func (f frame) rect(e *capture.Element) image.Rectangle {
	return image.Rect(int(float64(e.X)*f.scale), int(float64(e.Y)*f.scale)-f.offsetY,
		int(float64(e.X+e.Width)*f.scale+0.999), int(float64(e.Y+e.Height)*f.scale+0.999)-f.offsetY)
}

// attribute explains clusters (image pixels of the segment that starts
// offsetY image pixels down the page) by the two captures' box trees.
func attribute(base, cur *capture.BoxTree, clusters []image.Rectangle, scale float64, offsetY int) []Change {
	if scale <= 0 {
		scale = 1
	}
	f := frame{scale, offsetY}
	bp, cp := pairTree(base), pairTree(cur)
	cands := candidates(base, cur, bp, cp, f)
	below := changedTextBelow(cands, bp, cur)
	var out []Change
	for _, cl := range clusters {
		out = append(out, explainCluster(cl, cands, below, f, bp, cp))
	}
	return foldChanges(out, cur)
}

// candidate is an element pair that may explain a cluster: the indexes of
// its baseline (b) and current (c) elements, -1 for none, and its footprint
// (both boxes) in the segment.
type candidate struct {
	b, c int
	fp   image.Rectangle
}

// candidates pairs the two trees' elements: every current element with its
// baseline element (by key, else by path) or none, then every baseline
// element left unpaired.
func candidates(base, cur *capture.BoxTree, bp, cp *pairing, f frame) []candidate {
	var cands []candidate
	byPath := pairByPath(bp, cp)
	pairedBase := map[int]bool{}
	for _, b := range byPath {
		pairedBase[b] = true
	}
	if cur != nil {
		for i, e := range cur.Elements {
			b, ok := bp.byKey[cp.keys[i]]
			if !ok {
				b, ok = byPath[i]
			}
			fp := f.rect(&e)
			if ok {
				fp = fp.Union(f.rect(&base.Elements[b]))
			} else {
				b = -1
			}
			cands = append(cands, candidate{b, i, fp})
		}
	}
	if base != nil {
		for i, e := range base.Elements {
			if _, ok := cp.byKey[bp.keys[i]]; !ok && !pairedBase[i] {
				cands = append(cands, candidate{i, -1, f.rect(&e)})
			}
		}
	}
	return cands
}

// changedTextBelow is, by current element, the footprints of the changed
// texts below it: an ancestor's text changes with them, and explains only a
// cluster there.
func changedTextBelow(cands []candidate, bp *pairing, cur *capture.BoxTree) map[int][]image.Rectangle {
	below := map[int][]image.Rectangle{}
	for _, c := range cands {
		if c.c < 0 {
			continue
		}
		b := bp.elem(c.b)
		if b != nil && b.TextHash == cur.Elements[c.c].TextHash {
			continue
		}
		for p, n := cur.Elements[c.c].Parent, 0; p >= 0 && p < c.c && n < maxAncestry; p, n = cur.Elements[p].Parent, n+1 {
			below[p] = append(below[p], c.fp)
		}
	}
	return below
}

// explainCluster is the change of one cluster: explained by the smallest
// candidate covering it whose difference shows there, unattributed without
// one.
func explainCluster(cl image.Rectangle, cands []candidate, below map[int][]image.Rectangle, f frame, bp, cp *pairing) Change {
	var hits []candidate
	for _, c := range cands {
		if in := cl.Intersect(c.fp); area(in) >= int(minCoverage*float64(area(cl))) && !in.Empty() {
			hits = append(hits, c)
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return area(hits[i].fp) < area(hits[j].fp) })
	for _, h := range hits {
		kind, props, dx, dy := classify(bp.elem(h.b), cp.elem(h.c))
		if kind == ChangeText && h.b >= 0 && h.c >= 0 && len(below[h.c]) > 0 && !overlapsAny(cl, below[h.c]) {
			continue // its text changed elsewhere, in a descendant
		}
		if kind == "" {
			continue
		}
		return explained(kind, props, dx, dy, cl, f, bp, cp, h.b, h.c)
	}
	return Change{Kind: ChangeUnattributed, Box: rectOf(cl), node: -1}
}

// explained builds the change of a cluster explained by an element pair.
func explained(kind string, props []string, dx, dy int, cl image.Rectangle, f frame, bp, cp *pairing, b, c int) Change {
	ch := Change{Kind: kind, Box: rectOf(cl), Properties: props, DX: dx, DY: dy, node: c}
	if e := bp.elem(b); e != nil {
		ch.Selector, ch.Tag = e.Selector, e.Tag
		ch.Before = stateOf(e, f)
		ch.Before.Container = containerOf(bp.t, b, f)
		ch.Ancestry = ancestry(bp.t, b)
	}
	if e := cp.elem(c); e != nil {
		if b := bp.elem(b); b != nil && b.Selector != e.Selector {
			ch.Selector = pathOf(e) // paired by path: its name changed with its text
		} else {
			ch.Selector = e.Selector
		}
		ch.Tag = e.Tag
		ch.After = stateOf(e, f)
		ch.After.Container = containerOf(cp.t, c, f)
		ch.Ancestry = ancestry(cp.t, c)
	}
	return ch
}

// classify says how an element changed between its baseline (b) and current
// (c) forms; "" when it did not in any way a box tree records.
func classify(b, c *capture.Element) (kind string, props []string, dx, dy int) {
	switch {
	case b == nil && c == nil:
		return "", nil, 0, 0
	case b == nil:
		return ChangeAdded, nil, 0, 0
	case c == nil:
		return ChangeRemoved, nil, 0, 0
	}
	dx, dy = c.X-b.X, c.Y-b.Y
	if b.TextHash != c.TextHash {
		return ChangeText, nil, dx, dy
	}
	if dx != 0 || dy != 0 {
		return ChangeMoved, nil, dx, dy
	}
	if b.StyleHash != c.StyleHash {
		props = styleDiff(b, c)
		if b.Style.BgImage != c.Style.BgImage && len(props) == 1 {
			return ChangeImage, props, 0, 0
		}
		return ChangeStyle, props, 0, 0
	}
	if c.Image {
		return ChangeImage, nil, 0, 0
	}
	if framed(c.Tag) {
		// A frame's document is not in the box tree: an unchanged frame
		// element over changed pixels is its content changing (an ad).
		return ChangeFrame, nil, 0, 0
	}
	return "", nil, 0, 0
}

// framed reports whether tag embeds a document the box tree cannot see into.
func framed(tag string) bool {
	return tag == "iframe" || tag == "frame" || tag == "embed" || tag == "object"
}

// styleDiff names the recorded styles that differ.
func styleDiff(b, c *capture.Element) []string {
	var out []string
	if b.Style.Font != c.Style.Font {
		out = append(out, "font")
	}
	if b.Style.Color != c.Style.Color {
		out = append(out, "color")
	}
	if b.Style.Background != c.Style.Background {
		out = append(out, "background-color")
	}
	if b.Style.BgImage != c.Style.BgImage {
		out = append(out, "background-image")
	}
	if b.Width != c.Width || b.Height != c.Height {
		out = append(out, "size")
	}
	return out
}

func stateOf(e *capture.Element, f frame) *ElementState {
	st := map[string]string{}
	for k, v := range map[string]string{"font": e.Style.Font, "color": e.Style.Color,
		"background-color": e.Style.Background, "background-image": e.Style.BgImage} {
		if v != "" {
			st[k] = v
		}
	}
	return &ElementState{Box: rectOf(f.rect(e)), Text: e.Text, Style: st}
}

// containerOf is the box of element i's parent in t, nil when it has none.
func containerOf(t *capture.BoxTree, i int, f frame) *Rect {
	p := t.Elements[i].Parent
	if p < 0 || p >= i {
		return nil
	}
	r := rectOf(f.rect(&t.Elements[p]))
	return &r
}

// ancestry is element i and its recorded ancestors, root first.
func ancestry(t *capture.BoxTree, i int) []Node {
	var out []Node
	for n := 0; i >= 0 && i < len(t.Elements) && n < maxAncestry; n++ {
		e := t.Elements[i]
		out = append(out, Node{Tag: e.Tag, ID: e.ID, Classes: e.Classes, TestID: e.TestID, Role: e.Role, Name: e.Name, Selector: e.Selector, Path: e.Path})
		if e.Parent >= i { // parents come first in document order; anything else is a broken tree
			break
		}
		i = e.Parent
	}
	for l, r := 0, len(out)-1; l < r; l, r = l+1, r-1 {
		out[l], out[r] = out[r], out[l]
	}
	return out
}

// foldChanges merges the changes of one element and kind into one, and a
// move of an element into the same move of its moved ancestor.
func foldChanges(in []Change, cur *capture.BoxTree) []Change {
	var out []Change
	idx := map[string]int{}
	for _, ch := range in {
		k := fmt.Sprintf("%s\x00%s\x00%d,%d", ch.Kind, ch.Selector, ch.DX, ch.DY)
		if ch.Kind == ChangeUnattributed {
			k += fmt.Sprint(len(out)) // each its own
		}
		if i, ok := idx[k]; ok {
			out[i].Box = union(out[i].Box, ch.Box)
			continue
		}
		idx[k] = len(out)
		out = append(out, ch)
	}
	if cur == nil {
		return out
	}
	moved := map[int]int{} // current tree index → change index
	for i, ch := range out {
		if ch.Kind == ChangeMoved && ch.node >= 0 {
			moved[ch.node] = i
		}
	}
	keep := out[:0:0]
	for _, ch := range out {
		if ch.Kind == ChangeMoved && ch.node >= 0 {
			if a, ok := movedAncestor(cur, ch.node, moved, out, ch); ok {
				out[a].Box = union(out[a].Box, ch.Box)
				continue
			}
		}
		keep = append(keep, ch)
	}
	return keep
}

// movedAncestor finds the change of an ancestor of node that moved as ch did.
func movedAncestor(t *capture.BoxTree, node int, moved map[int]int, out []Change, ch Change) (int, bool) {
	p := t.Elements[node].Parent
	for n := 0; p >= 0 && p < node && n < maxAncestry; n++ {
		if a, ok := moved[p]; ok && out[a].DX == ch.DX && out[a].DY == ch.DY {
			return a, true
		}
		node, p = p, t.Elements[p].Parent
	}
	return 0, false
}

func rectOf(r image.Rectangle) Rect {
	return Rect{X: r.Min.X, Y: r.Min.Y, Width: r.Dx(), Height: r.Dy()}
}

func union(a, b Rect) Rect {
	r := image.Rect(a.X, a.Y, a.X+a.Width, a.Y+a.Height).Union(image.Rect(b.X, b.Y, b.X+b.Width, b.Y+b.Height))
	return rectOf(r)
}

func overlapsAny(r image.Rectangle, rs []image.Rectangle) bool {
	for _, o := range rs {
		if r.Overlaps(o) {
			return true
		}
	}
	return false
}
