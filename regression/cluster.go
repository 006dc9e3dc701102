package regression

import (
	"image"
	"sort"
)

// Clustering turns a diff image's differing pixels into a few rectangles, the
// unit a change is explained by (changes.go): pixels are binned into cells of
// clusterCell image pixels, cells holding a difference are joined into
// 8-connected components, and components closer than clusterGap are merged.
// Memory is one byte per cell; at most maxClusters rectangles are returned,
// the largest first.

const (
	clusterCell = 8
	clusterGap  = 16
	maxClusters = 200
)

// diffRed is the colour the diff image paints a differing pixel.
func diffRed(img *image.NRGBA, x, y int) bool {
	i := img.PixOffset(x, y)
	p := img.Pix[i : i+4 : i+4]
	return p[0] == 255 && p[1] == 0 && p[2] == 0 && p[3] == 255
}

// clusterDiff returns the rectangles (image pixels of img) holding img's
// differing pixels.
func clusterDiff(img *image.NRGBA) []image.Rectangle {
	if img == nil {
		return nil
	}
	g, ok := binDiff(img)
	if !ok {
		return nil
	}
	boxes := g.components(img)
	if len(boxes) > 4*maxClusters { // noise everywhere: one box, not a quadratic merge
		all := image.Rectangle{}
		for _, r := range boxes {
			all = all.Union(r)
		}
		return []image.Rectangle{all}
	}
	boxes = mergeNear(boxes, clusterGap)
	sort.Slice(boxes, func(i, j int) bool {
		ai, aj := area(boxes[i]), area(boxes[j])
		if ai != aj {
			return ai > aj
		}
		return boxes[i].Min.Y < boxes[j].Min.Y || boxes[i].Min.Y == boxes[j].Min.Y && boxes[i].Min.X < boxes[j].Min.X
	})
	if len(boxes) > maxClusters {
		boxes = boxes[:maxClusters]
	}
	return boxes
}

// cellGrid is a diff image binned into cells of clusterCell pixels: 0 empty,
// 1 differs, 2 visited.
type cellGrid struct {
	cells  []byte
	gw, gh int
}

// binDiff bins img's differing pixels; false when none differs.
func binDiff(img *image.NRGBA) (cellGrid, bool) {
	b := img.Bounds()
	gw, gh := (b.Dx()+clusterCell-1)/clusterCell, (b.Dy()+clusterCell-1)/clusterCell
	if gw == 0 || gh == 0 {
		return cellGrid{}, false
	}
	g := cellGrid{cells: make([]byte, gw*gh), gw: gw, gh: gh}
	any := false
	for y := b.Min.Y; y < b.Max.Y; y++ {
		row := (y - b.Min.Y) / clusterCell * gw
		for x := b.Min.X; x < b.Max.X; x++ {
			if diffRed(img, x, y) {
				g.cells[row+(x-b.Min.X)/clusterCell] = 1
				any = true
			}
		}
	}
	return g, any
}

// components are the bounding boxes (image pixels of img, tightened to its
// differing pixels) of the grid's 8-connected components of differing cells.
func (g cellGrid) components(img *image.NRGBA) []image.Rectangle {
	b := img.Bounds()
	var boxes []image.Rectangle
	var stack []int
	for start, v := range g.cells {
		if v != 1 {
			continue
		}
		g.cells[start] = 2
		stack = append(stack[:0], start)
		x0, y0, x1, y1 := g.gw, g.gh, -1, -1
		for len(stack) > 0 {
			c := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			cx, cy := c%g.gw, c/g.gw
			x0, y0, x1, y1 = min(x0, cx), min(y0, cy), max(x1, cx), max(y1, cy)
			stack = g.visitNeighbours(cx, cy, stack)
		}
		r := image.Rect(x0*clusterCell, y0*clusterCell, (x1+1)*clusterCell, (y1+1)*clusterCell).Add(b.Min).Intersect(b)
		boxes = append(boxes, tighten(img, r))
	}
	return boxes
}

// visitNeighbours marks the unvisited differing cells around (cx, cy)
// visited and pushes them on stack.
func (g cellGrid) visitNeighbours(cx, cy int, stack []int) []int {
	for dy := -1; dy <= 1; dy++ {
		for dx := -1; dx <= 1; dx++ {
			nx, ny := cx+dx, cy+dy
			if nx < 0 || ny < 0 || nx >= g.gw || ny >= g.gh {
				continue
			}
			if n := ny*g.gw + nx; g.cells[n] == 1 {
				g.cells[n] = 2
				stack = append(stack, n)
			}
		}
	}
	return stack
}

// tighten shrinks r to the differing pixels inside it.
func tighten(img *image.NRGBA, r image.Rectangle) image.Rectangle {
	out := image.Rectangle{}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if diffRed(img, x, y) {
				out = out.Union(image.Rect(x, y, x+1, y+1))
			}
		}
	}
	return out
}

// mergeNear merges rectangles until no two are within gap pixels of each other.
func mergeNear(boxes []image.Rectangle, gap int) []image.Rectangle {
	for merged := true; merged; {
		merged = false
		for i := 0; i < len(boxes); i++ {
			grown := boxes[i].Inset(-gap)
			for j := i + 1; j < len(boxes); j++ {
				if grown.Overlaps(boxes[j]) {
					boxes[i] = boxes[i].Union(boxes[j])
					boxes = append(boxes[:j], boxes[j+1:]...)
					merged = true
					grown = boxes[i].Inset(-gap)
					j = i
				}
			}
		}
	}
	return boxes
}

func area(r image.Rectangle) int { return r.Dx() * r.Dy() }
