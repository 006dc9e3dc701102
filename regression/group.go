package regression

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"image"
	"image/color"
	"slices"

	"github.com/snapq/snapq/diff"
)

// Change groups (issue 16, review at scale): the comparisons of a run whose
// changes are identical — the same clusters of changed pixels at the same
// place in their segment image, holding the same pixels before and after —
// share a group key, so one review decision covers them all (a header
// changed on every page and viewport is one group).

// groupCell is the side, in image pixels, of the grid cells changed pixels
// are clustered by: cells holding a change that touch (8-neighbourhood) are
// one cluster.
const groupCell = 16

// groupKeyVersion prefixes every key: a change of the recipe changes it, so
// keys of two recipes never meet in one run.
const groupKeyVersion = "g1"

// GroupKey is the key of the change a diff image shows (marked pixels,
// diff.Marks): a hash of the bounding boxes of its clusters of changed
// pixels, relative to the segment image's top left, and of every changed
// pixel's position, mark and values in the current and baseline images (a
// nil image, or a pixel outside it, hashes as absent). The segment's size
// is not part of it: the same header change on a narrow and a wide
// viewport is one change. "" when nothing is marked.
func GroupKey(d *image.NRGBA, cur, base image.Image) string {
	if d == nil {
		return ""
	}
	boxes := ChangeBoxes(d)
	if len(boxes) == 0 {
		return ""
	}
	h := sha256.New()
	h.Write([]byte(groupKeyVersion))
	var buf [4 * 4]byte
	for _, b := range boxes {
		binary.BigEndian.PutUint32(buf[0:], uint32(b.Min.X))
		binary.BigEndian.PutUint32(buf[4:], uint32(b.Min.Y))
		binary.BigEndian.PutUint32(buf[8:], uint32(b.Max.X))
		binary.BigEndian.PutUint32(buf[12:], uint32(b.Max.Y))
		h.Write(buf[:])
	}
	h.Write([]byte{0xff})
	o := d.Rect.Min
	px := make([]byte, 0, 8+3*5)
	for y := d.Rect.Min.Y; y < d.Rect.Max.Y; y++ {
		for x := d.Rect.Min.X; x < d.Rect.Max.X; x++ {
			if !diff.Marks(d, x, y) {
				continue
			}
			px = px[:0]
			px = binary.BigEndian.AppendUint32(px, uint32(x-o.X))
			px = binary.BigEndian.AppendUint32(px, uint32(y-o.Y))
			px = append(px, d.Pix[d.PixOffset(x, y):d.PixOffset(x, y)+4]...)
			px = appendPixel(px, cur, x, y)
			px = appendPixel(px, base, x, y)
			h.Write(px)
		}
	}
	return groupKeyVersion + "-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// appendPixel appends 1 and img's non-premultiplied pixel at (x, y), or 0
// and four zero bytes when there is none.
func appendPixel(out []byte, img image.Image, x, y int) []byte {
	if img == nil || !(image.Point{X: x, Y: y}).In(img.Bounds()) {
		return append(out, 0, 0, 0, 0, 0)
	}
	if n, ok := img.(*image.NRGBA); ok {
		i := n.PixOffset(x, y)
		return append(append(out, 1), n.Pix[i:i+4]...)
	}
	c := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
	return append(out, 1, c.R, c.G, c.B, c.A)
}

// ChangeBoxes are the bounding boxes, relative to the image's top left, of
// the clusters of pixels a diff image marks, top to bottom then left to
// right: marked pixels in touching groupCell cells are one cluster.
func ChangeBoxes(d *image.NRGBA) []image.Rectangle {
	r := d.Rect
	cw, ch := (r.Dx()+groupCell-1)/groupCell, (r.Dy()+groupCell-1)/groupCell
	if cw == 0 || ch == 0 {
		return nil
	}
	cells := make([]image.Rectangle, cw*ch) // marked pixels' bounds per cell; empty: none
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if !diff.Marks(d, x, y) {
				continue
			}
			i := ((y-r.Min.Y)/groupCell)*cw + (x-r.Min.X)/groupCell
			px := image.Rect(x-r.Min.X, y-r.Min.Y, x-r.Min.X+1, y-r.Min.Y+1)
			if cells[i].Empty() {
				cells[i] = px
			} else {
				cells[i] = cells[i].Union(px)
			}
		}
	}
	seen := make([]bool, len(cells))
	var boxes []image.Rectangle
	var stack []int
	for start := range cells {
		if seen[start] || cells[start].Empty() {
			continue
		}
		box := image.Rectangle{}
		seen[start] = true
		stack = append(stack[:0], start)
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			box = box.Union(cells[i])
			cx, cy := i%cw, i/cw
			for dy := -1; dy <= 1; dy++ {
				for dx := -1; dx <= 1; dx++ {
					nx, ny := cx+dx, cy+dy
					if nx < 0 || ny < 0 || nx >= cw || ny >= ch {
						continue
					}
					if j := ny*cw + nx; !seen[j] && !cells[j].Empty() {
						seen[j] = true
						stack = append(stack, j)
					}
				}
			}
		}
		boxes = append(boxes, box)
	}
	slices.SortFunc(boxes, func(a, b image.Rectangle) int {
		return cmp.Or(a.Min.Y-b.Min.Y, a.Min.X-b.Min.X, a.Max.Y-b.Max.Y, a.Max.X-b.Max.X)
	})
	return boxes
}

// Group is the comparisons of one run that show one change.
type Group struct {
	// Key is the comparisons' GroupKey; the group's id in the API.
	Key string
	// Comparisons are the members, in the run's order; the first is the
	// group's representative.
	Comparisons []*Comparison
	// Counts counts the members by status; Approved and Rejected count the
	// members reviewed so.
	Counts GroupCounts
}

// GroupCounts counts a group's members.
type GroupCounts struct {
	Passed   int `json:"passed"`
	Failed   int `json:"failed"`
	New      int `json:"new"`
	Missing  int `json:"missing"`
	Error    int `json:"error"`
	Approved int `json:"approved"`
	Rejected int `json:"rejected"`
}

// Groups groups a run's comparisons by key (comparisons without one are
// left out), the largest group first (ties: the group whose first member
// comes first). The representative of a group is its first member that
// needs review, else its first.
func Groups(cs []*Comparison) []*Group {
	byKey := map[string]*Group{}
	var out []*Group
	for _, c := range cs {
		if c.GroupKey == "" {
			continue
		}
		g := byKey[c.GroupKey]
		if g == nil {
			g = &Group{Key: c.GroupKey}
			byKey[c.GroupKey] = g
			out = append(out, g)
		}
		g.Comparisons = append(g.Comparisons, c)
		switch c.Status {
		case ComparePassed:
			g.Counts.Passed++
		case CompareFailed:
			g.Counts.Failed++
		case CompareNew:
			g.Counts.New++
		case CompareMissing:
			g.Counts.Missing++
		case CompareError:
			g.Counts.Error++
		}
		if c.ApprovedAt != nil {
			g.Counts.Approved++
		}
		if c.RejectedAt != nil {
			g.Counts.Rejected++
		}
	}
	for _, g := range out {
		if i := slices.IndexFunc(g.Comparisons, func(c *Comparison) bool { return c.NeedsReview() }); i > 0 {
			rep := g.Comparisons[i]
			g.Comparisons = append([]*Comparison{rep}, slices.Delete(slices.Clone(g.Comparisons), i, i+1)...)
		}
	}
	slices.SortStableFunc(out, func(a, b *Group) int { return len(b.Comparisons) - len(a.Comparisons) })
	return out
}

// NeedsReview reports whether the comparison waits for a decision: failed,
// new or missing, neither approved nor rejected.
func (c *Comparison) NeedsReview() bool {
	return c.ApprovedAt == nil && c.RejectedAt == nil &&
		(c.Status == CompareFailed || c.Status == CompareNew || c.Status == CompareMissing)
}

// Reviewable lists the IDs of a group's members an approval or a rejection
// acts on: failed, new or missing and not approved yet (a rejected one may
// still be approved).
func (g *Group) Reviewable() []string {
	var ids []string
	for _, c := range g.Comparisons {
		if c.ApprovedAt == nil && (c.Status == CompareFailed || c.Status == CompareNew || c.Status == CompareMissing) {
			ids = append(ids, c.ID)
		}
	}
	return ids
}
