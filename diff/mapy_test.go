package diff

import "testing"

func TestMapY(t *testing.T) {
	t.Parallel()
	// 0-100 equal; 40 rows inserted; 100-200 equal (+40); 200-230 removed;
	// 230-260 changed into 20 rows; 260-300 equal (+0 after -30 -10 +40).
	hunks := []Hunk{
		{Kind: HunkEqual, A0: 0, A1: 100, B0: 0, B1: 100},
		{Kind: HunkInserted, A0: 100, A1: 100, B0: 100, B1: 140},
		{Kind: HunkEqual, A0: 100, A1: 200, B0: 140, B1: 240},
		{Kind: HunkRemoved, A0: 200, A1: 230, B0: 240, B1: 240},
		{Kind: HunkChanged, A0: 230, A1: 260, B0: 240, B1: 260},
		{Kind: HunkEqual, A0: 260, A1: 300, B0: 260, B1: 300},
	}
	tests := []struct {
		y, want int
		paired  bool
	}{
		{-5, -5, false},
		{0, 0, true},
		{99, 99, true},
		{100, 140, true}, // below the insertion: shifted
		{199, 239, true},
		{200, 240, false}, // removed: the removal point
		{229, 240, false},
		{230, 240, true}, // changed, paired top-anchored
		{249, 259, true},
		{250, 260, false}, // changed, past the paired rows
		{260, 260, true},
		{299, 299, true},
		{300, 300, false}, // past the end
		{350, 350, false},
	}
	for _, tt := range tests {
		got, paired := MapY(hunks, tt.y)
		if got != tt.want || paired != tt.paired {
			t.Errorf("MapY(%d) = %d, %v; want %d, %v", tt.y, got, paired, tt.want, tt.paired)
		}
	}
	if got, _ := MapY(nil, 17); got != 17 {
		t.Errorf("MapY without hunks = %d", got)
	}
	// Open-ended: the last hunk left out, rows past it move as its end did.
	if got, paired := MapY(hunks[:3], 210); got != 250 || paired {
		t.Errorf("MapY past the hunks = %d, %v; want 250, false", got, paired)
	}
	spans := []struct{ y0, y1, w0, w1 int }{
		{10, 30, 10, 30},     // above everything: in place
		{120, 150, 160, 190}, // below the insertion: moved with its content
		{90, 110, 90, 150},   // the insertion inside it: taller
		{190, 240, 230, 250}, // 30 of its 50 rows removed: 20 shorter
		{5, 5, 5, 5},         // empty
	}
	for _, s := range spans {
		if g0, g1 := MapSpan(hunks, s.y0, s.y1); g0 != s.w0 || g1 != s.w1 {
			t.Errorf("MapSpan(%d, %d) = %d, %d; want %d, %d", s.y0, s.y1, g0, g1, s.w0, s.w1)
		}
	}
}
