package diff

import "sort"

// MapY maps row y of the first page to the row of the second page holding
// it, by hunks (an alignment covering both pages top to bottom, as
// PageResult.Hunks). Rows of equal hunks move by their hunk's shift, and so
// do the rows a changed hunk pairs (top-anchored, as ComparePages compares
// them); paired is then true. A removed row (or one of a changed hunk past
// the rows it pairs) maps to where its hunk now is, paired false. Rows above
// the first hunk keep their place; rows past the last (a hunk an open-ended
// comparison left out) move as the last hunk's end did.
func MapY(hunks []Hunk, y int) (mapped int, paired bool) {
	if len(hunks) == 0 || y < hunks[0].A0 {
		return y, false
	}
	// The first hunk ending below y holds it: an inserted hunk is empty on
	// the first page (A0 = A1), so it never does.
	i := sort.Search(len(hunks), func(i int) bool { return hunks[i].A1 > y })
	if i == len(hunks) {
		last := hunks[len(hunks)-1]
		return y + last.B1 - last.A1, false
	}
	h := hunks[i]
	switch h.Kind {
	case HunkEqual:
		return y + h.B0 - h.A0, true
	case HunkChanged:
		if d := y - h.A0; d < h.B1-h.B0 {
			return h.B0 + d, true
		}
		return h.B1, false
	default: // removed (an inserted hunk holds no row of the first page)
		return h.B0, false
	}
}

// MapSpan maps rows [y0, y1) of the first page to the second (MapY): the
// span's top row and the row below its last. Content inserted inside the
// span makes it taller, content removed from it shorter.
func MapSpan(hunks []Hunk, y0, y1 int) (int, int) {
	top, _ := MapY(hunks, y0)
	if y1 <= y0 {
		return top, top
	}
	bottom, _ := MapY(hunks, y1-1)
	return top, max(top, bottom+1)
}
