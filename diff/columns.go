package diff

// Columns (issue 30): a row alignment matches whole rows, so on a page of
// two columns a sidebar that changes height makes every row beside it
// differ, and the alignment "moves" the unchanged main column to follow the
// sidebar: its paragraphs come out removed and inserted, its headings moved.
// After aligning, a run of hunks that leaves the page's shift where it was
// (equal hunks of one shift on both sides, rows of one height in each page)
// is compared in place instead, as one changed hunk, when a band of columns
// with content is identical in place over the whole run: that content did
// not move, so the rows did not either; only the other columns changed.

const (
	// maxColumnRunHunks and maxColumnRunRows bound the runs looked at.
	maxColumnRunHunks = 256
	maxColumnRunRows  = 4000
	// minInkColumns is how many columns of an in-place band must hold
	// content (not one colour down the run) for the band to count.
	minInkColumns = 8
)

// inPlaceColumns replaces each such run of r.Hunks by one changed hunk.
func (r *PageResult) inPlaceColumns() {
	var out []Hunk
	hs := r.Hunks
	for i := 0; i < len(hs); i++ {
		if hs[i].Kind == HunkEqual || i == 0 || hs[i-1].Kind != HunkEqual {
			out = append(out, hs[i])
			continue
		}
		j := runEnd(hs, i)
		if j < 0 || (j == i+1 && hs[i].Kind == HunkChanged) {
			out = append(out, hs[i])
			continue
		}
		run := Hunk{Kind: HunkChanged, A0: hs[i].A0, A1: hs[j-1].A1, B0: hs[i].B0, B1: hs[j-1].B1}
		if !r.sameBand(run) {
			out = append(out, hs[i])
			continue
		}
		out = append(out, run)
		i = j - 1
	}
	r.Hunks = out
}

// runEnd is the index of the first equal hunk after i with the shift of the
// equal hunk before i, -1 when there is none within the bounds.
func runEnd(hs []Hunk, i int) int {
	s := hs[i-1].Shift()
	for j := i + 1; j < len(hs) && j-i <= maxColumnRunHunks; j++ {
		if hs[j].A0-hs[i].A0 > maxColumnRunRows {
			return -1
		}
		if hs[j].Kind == HunkEqual && hs[j].Shift() == s {
			return j
		}
	}
	return -1
}

// sameBand reports whether the rows of run (as tall in both pages) hold, in
// place, a band of identical columns at least a quarter of the page wide
// with content in minInkColumns of them.
func (r *PageResult) sameBand(run Hunk) bool {
	n := run.A1 - run.A0
	if n <= 0 || n != run.B1-run.B0 || r.Width <= 0 {
		return false
	}
	same := make([]bool, r.Width)
	ink := make([]bool, r.Width)
	for x := range same {
		same[x] = true
	}
	first, ok := r.pageRow(false, run.A0)
	if !ok {
		return false
	}
	for k := range n {
		ra, okA := r.pageRow(false, run.A0+k)
		rb, okB := r.pageRow(true, run.B0+k)
		if !okA || !okB {
			return false
		}
		for x := range same {
			o := 4 * x
			if same[x] && !samePixel(ra[o:o+4], rb[o:o+4]) {
				same[x] = false
			}
			if !ink[x] && !samePixel(ra[o:o+4], first[o:o+4]) {
				ink[x] = true
			}
		}
	}
	return inkedBand(same, ink, r.Width/4)
}

// inkedBand reports whether same has a run of at least minWidth columns
// with content in minInkColumns of them.
func inkedBand(same, ink []bool, minWidth int) bool {
	width, inked := 0, 0
	for x := range same {
		if !same[x] {
			width, inked = 0, 0
			continue
		}
		width++
		if ink[x] {
			inked++
		}
		if width >= minWidth && inked >= minInkColumns {
			return true
		}
	}
	return false
}

// samePixel compares two RGBA pixels quantised as the row signatures are.
func samePixel(a, b []byte) bool {
	return a[0]&0xf8 == b[0]&0xf8 && a[1]&0xf8 == b[1]&0xf8 && a[2]&0xf8 == b[2]&0xf8 && a[3]&0xf8 == b[3]&0xf8
}

// pageRow is row y of the first page (second false) or the second.
func (r *PageResult) pageRow(second bool, y int) ([]byte, bool) {
	off := r.offA
	if second {
		off = r.offB
	}
	s := segAt(off, y)
	if s < 0 || y >= off[len(off)-1] {
		return nil, false
	}
	rs, ok := r.raster(second, s)
	if !ok || rs.w != r.Width {
		return nil, false
	}
	return rs.row(y - off[s]), true
}
