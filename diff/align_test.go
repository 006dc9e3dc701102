package diff

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// rows makes a signature list from letters: each byte a row.
func rows(s string) []uint64 {
	out := make([]uint64, len(s))
	for i := range len(s) {
		out[i] = uint64(s[i])
	}
	return out
}

func TestAlign(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		a, b string
		want []Hunk
	}{
		{"equal", "abcdef", "abcdef", []Hunk{{HunkEqual, 0, 6, 0, 6}}},
		{"inserted", "abcdef", "abcXYdef", []Hunk{{HunkEqual, 0, 3, 0, 3}, {HunkInserted, 3, 3, 3, 5}, {HunkEqual, 3, 6, 5, 8}}},
		{"removed", "abcXYdef", "abcdef", []Hunk{{HunkEqual, 0, 3, 0, 3}, {HunkRemoved, 3, 5, 3, 3}, {HunkEqual, 5, 8, 3, 6}}},
		{"changed", "abcdef", "abXYef", []Hunk{{HunkEqual, 0, 2, 0, 2}, {HunkChanged, 2, 4, 2, 4}, {HunkEqual, 4, 6, 4, 6}}},
		{"changed taller", "abcdef", "abXYZef", []Hunk{{HunkEqual, 0, 2, 0, 2}, {HunkChanged, 2, 4, 2, 5}, {HunkEqual, 4, 6, 5, 7}}},
		{"inserted at top", "abc", "XYabc", []Hunk{{HunkInserted, 0, 0, 0, 2}, {HunkEqual, 0, 3, 2, 5}}},
		{"removed at end", "abcXY", "abc", []Hunk{{HunkEqual, 0, 3, 0, 3}, {HunkRemoved, 3, 5, 3, 3}}},
		{"empty a", "", "ab", []Hunk{{HunkInserted, 0, 0, 0, 2}}},
		{"empty b", "ab", "", []Hunk{{HunkRemoved, 0, 2, 0, 0}}},
		{"both empty", "", "", nil},
		{"insert and change", "abcdefgh", "aXbcdeYgh", []Hunk{{HunkEqual, 0, 1, 0, 1}, {HunkInserted, 1, 1, 1, 2}, {HunkEqual, 1, 5, 2, 6}, {HunkChanged, 5, 6, 6, 7}, {HunkEqual, 6, 8, 7, 9}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Align(rows(tt.a), rows(tt.b), 0)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Align(%q, %q)\n got %v\nwant %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

// TestAlignCoversBoth checks on random edits that the hunks tile both
// sequences, that equal hunks hold equal rows, and that the script is no
// longer than the edits made.
func TestAlignCoversBoth(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		n := rng.IntN(200)
		a := make([]uint64, n)
		for i := range a {
			a[i] = uint64(rng.IntN(6)) // many repeats, as blank rows are
		}
		b := slices.Clone(a)
		edits := rng.IntN(6)
		cost := 0
		for range edits {
			pos := rng.IntN(len(b) + 1)
			k := 1 + rng.IntN(20)
			if rng.IntN(2) == 0 || len(b) == 0 {
				ins := make([]uint64, k)
				for i := range ins {
					ins[i] = uint64(100 + rng.IntN(1000))
				}
				b = slices.Insert(b, pos, ins...)
			} else {
				k = min(k, len(b)-min(pos, len(b)-1))
				pos = min(pos, len(b)-1)
				b = slices.Delete(b, pos, pos+k)
			}
			cost += k
		}
		hs := Align(a, b, 0)
		ia, ib, script := 0, 0, 0
		for _, h := range hs {
			if h.A0 != ia || h.B0 != ib || h.A1 < h.A0 || h.B1 < h.B0 {
				t.Fatalf("hunks do not tile: %v", hs)
			}
			if h.Kind == HunkEqual {
				if !slices.Equal(a[h.A0:h.A1], b[h.B0:h.B1]) {
					t.Fatalf("equal hunk %v holds different rows", h)
				}
			} else {
				script += h.A1 - h.A0 + h.B1 - h.B0
			}
			ia, ib = h.A1, h.B1
		}
		if ia != len(a) || ib != len(b) {
			t.Fatalf("hunks end at %d/%d, want %d/%d", ia, ib, len(a), len(b))
		}
		if script > cost {
			t.Fatalf("script of %d rows for %d rows of edits", script, cost)
		}
	}
}

func TestAlignMaxEdits(t *testing.T) {
	t.Parallel()
	got := Align(rows("abcdefgh"), rows("abXYZWgh"), 3)
	want := []Hunk{{HunkEqual, 0, 2, 0, 2}, {HunkChanged, 2, 6, 2, 6}, {HunkEqual, 6, 8, 6, 8}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
