package diff

import (
	"encoding/binary"
	"image"
)

// HunkKind names what happened to a run of rows between two pages.
type HunkKind string

// Hunk kinds. They are part of snapq's public API (comparison hunks).
const (
	// HunkEqual rows have the same signature in both pages (they may still
	// differ below the signature's quantisation: ComparePages diffs them).
	HunkEqual HunkKind = "equal"
	// HunkInserted rows exist only in the second page.
	HunkInserted HunkKind = "inserted"
	// HunkRemoved rows exist only in the first page.
	HunkRemoved HunkKind = "removed"
	// HunkChanged rows of the first page were replaced by rows of the second
	// (a removal and an insertion with nothing equal between them).
	HunkChanged HunkKind = "changed"
)

// DefaultMaxEdits bounds Align's work and memory: past this many inserted
// plus removed rows (after the common top and bottom are set aside) the
// middle of the pages is reported as one changed hunk, compared top-anchored
// as the pixel mode does. The edit trace holds about MaxEdits² 4-byte
// integers (16 MB at 2,000).
const DefaultMaxEdits = 2000

// Hunk is a run of rows: [A0, A1) of the first page and [B0, B1) of the
// second. Equal hunks have the same height on both sides; an inserted hunk
// is empty on the A side (A0 = A1, where it was inserted), a removed one
// on the B side.
type Hunk struct {
	Kind HunkKind `json:"kind"`
	A0   int      `json:"a_start"`
	A1   int      `json:"a_end"`
	B0   int      `json:"b_start"`
	B1   int      `json:"b_end"`
}

// Shift is how far the hunk's rows moved down from the first page to the
// second (negative: up).
func (h Hunk) Shift() int { return h.B0 - h.A0 }

// quantMask keeps the top 5 bits of every channel: anti-aliasing and
// rendering noise of a few levels rarely change a row's signature.
const quantMask = 0xf8f8f8f8_f8f8f8f8

// rowSignature hashes one row of RGBA bytes, quantised (FNV-1a over 64-bit
// words, then a final mix).
func rowSignature(row []byte) uint64 {
	h := uint64(14695981039346656037)
	for len(row) >= 8 {
		h = (h ^ binary.LittleEndian.Uint64(row)&quantMask) * 1099511628211
		row = row[8:]
	}
	if len(row) == 4 {
		h = (h ^ uint64(binary.LittleEndian.Uint32(row))&0xf8f8f8f8) * 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return h
}

// RowSignatures returns one 64-bit signature per pixel row of img: a hash of
// the row with every channel quantised to 32 levels. Two rows with the same
// signature almost surely look the same; Align matches pages by them.
func RowSignatures(img image.Image) []uint64 {
	return signatures(toRaster(img))
}

func signatures(r raster) []uint64 {
	out := make([]uint64, r.h)
	for y := range r.h {
		out[y] = rowSignature(r.row(y))
	}
	return out
}

// Align matches the rows of two pages by their signatures (a longest common
// subsequence: Myers' O(ND) algorithm after the common top and bottom are set
// aside) and returns the hunks covering both pages top to bottom. maxEdits
// (0: DefaultMaxEdits) bounds the inserted plus removed rows looked for;
// past it the unmatched middle is one changed hunk.
func Align(a, b []uint64, maxEdits int) []Hunk {
	if maxEdits <= 0 {
		maxEdits = DefaultMaxEdits
	}
	n, m := len(a), len(b)
	pre := 0
	for pre < n && pre < m && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < n-pre && suf < m-pre && a[n-1-suf] == b[m-1-suf] {
		suf++
	}
	ops := []edit{{'=', pre}}
	mid, ok := myers(a[pre:n-suf], b[pre:m-suf], maxEdits)
	if !ok {
		mid = []edit{{'-', n - suf - pre}, {'+', m - suf - pre}}
	}
	ops = append(ops, mid...)
	ops = append(ops, edit{'=', suf})
	return hunks(ops)
}

// edit is a run of n rows kept ('='), removed ('-') or inserted ('+').
type edit struct {
	op byte
	n  int
}

// hunks turns an edit script into hunks: equal runs, and between two of
// them one inserted, removed or changed hunk.
func hunks(ops []edit) []Hunk {
	var out []Hunk
	ia, ib := 0, 0 // rows consumed
	sa, sb := 0, 0 // start of the pending edits
	flush := func() {
		ra, rb := ia-sa, ib-sb
		kind := HunkChanged
		switch {
		case ra == 0 && rb == 0:
			return
		case ra == 0:
			kind = HunkInserted
		case rb == 0:
			kind = HunkRemoved
		}
		out = append(out, Hunk{Kind: kind, A0: sa, A1: ia, B0: sb, B1: ib})
	}
	for _, e := range ops {
		if e.n == 0 {
			continue
		}
		switch e.op {
		case '=':
			flush()
			if k := len(out) - 1; k >= 0 && out[k].Kind == HunkEqual && out[k].A1 == ia && out[k].B1 == ib {
				out[k].A1, out[k].B1 = ia+e.n, ib+e.n
			} else {
				out = append(out, Hunk{Kind: HunkEqual, A0: ia, A1: ia + e.n, B0: ib, B1: ib + e.n})
			}
			ia, ib = ia+e.n, ib+e.n
			sa, sb = ia, ib
		case '-':
			ia += e.n
		case '+':
			ib += e.n
		}
	}
	flush()
	return out
}

// myers returns a shortest edit script from a to b, or false when it needs
// more than maxD inserted plus removed rows. V entries are int32 with -1 for
// a diagonal no path reaches; the trace keeps V after every step for the
// walk back.
func myers(a, b []uint64, maxD int) ([]edit, bool) {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return []edit{{'-', n}, {'+', m}}, true
	}
	limit := min(n+m, maxD)
	off := limit + 1
	v := make([]int32, 2*limit+3)
	for i := range v {
		v[i] = -1
	}
	var trace [][]int32
	for d := 0; d <= limit; d++ {
		for k := -d; k <= d; k += 2 {
			x := 0
			if d > 0 {
				if x, _ = step(v, off, d, k); x < 0 {
					v[off+k] = -1
					continue
				}
			}
			y := x - k
			if x > n || y > m || y < 0 {
				v[off+k] = -1
				continue
			}
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = int32(x)
			if x == n && y == m {
				trace = append(trace, append([]int32(nil), v[off-d:off+d+1]...))
				return walkBack(trace, n, m), true
			}
		}
		trace = append(trace, append([]int32(nil), v[off-d:off+d+1]...))
	}
	return nil, false
}

// step chooses how diagonal k is reached at step d from step d-1's V (v
// indexed with offset off): down (an insertion, from k+1, same x) or right
// (a removal, from k-1, x+1), preferring down on a tie. x is -1 when
// neither neighbour was reached.
func step(v []int32, off, d, k int) (x int, down bool) {
	xDown, xRight := -1, -1
	if k+1 <= d-1 && v[off+k+1] >= 0 {
		xDown = int(v[off+k+1])
	}
	if k-1 >= -(d-1) && v[off+k-1] >= 0 {
		xRight = int(v[off+k-1]) + 1
	}
	if xDown >= 0 && xDown >= xRight {
		return xDown, true
	}
	return xRight, false
}

// walkBack reads the edit script out of the trace, from the end.
func walkBack(trace [][]int32, n, m int) []edit {
	var rev []edit
	push := func(op byte, c int) {
		if c == 0 {
			return
		}
		if k := len(rev) - 1; k >= 0 && rev[k].op == op {
			rev[k].n += c
			return
		}
		rev = append(rev, edit{op, c})
	}
	x, y := n, m
	for d := len(trace) - 1; d > 0; d-- {
		k := x - y
		prev := trace[d-1] // V of step d-1, indexed k + (d-1)
		px, down := step(prev, d-1, d, k)
		var prevK int
		if down {
			prevK = k + 1
		} else {
			prevK, px = k-1, px-1
		}
		prevY := px - prevK
		if down {
			push('=', x-px)
			push('+', 1)
		} else {
			push('=', x-px-1)
			push('-', 1)
		}
		x, y = px, prevY
	}
	push('=', x) // the first snake, from (0, 0); y = x here
	out := make([]edit, 0, len(rev))
	for i := len(rev) - 1; i >= 0; i-- {
		out = append(out, rev[i])
	}
	return out
}
