package regression

import (
	"testing"
	"time"
)

func history(statuses string, approved map[int]bool) []TargetRun {
	// statuses newest first: p passed, f failed, n new, e error
	names := map[byte]CompareStatus{'p': ComparePassed, 'f': CompareFailed, 'n': CompareNew, 'e': CompareError}
	out := make([]TargetRun, len(statuses))
	for i := range statuses {
		out[i] = TargetRun{RunID: string(rune('a' + i)), CreatedAt: time.Unix(int64(100-i), 0),
			Status: names[statuses[i]], Approved: approved[i]}
	}
	return out
}

// A page that alternates scores 1; a real change that was approved costs
// one flip (passing → changed) and none on the way back; a steady page 0;
// an unapproved change that went away by itself is a flip both ways.
func TestFlakiness(t *testing.T) {
	got := Flakiness(map[string][]TargetRun{
		"clock":    history("pfpfp", nil),
		"redesign": history("ppfp", map[int]bool{2: true}), // newest first: the failed run (index 2) was approved
		"steady":   history("pppp", nil),
		"blip":     history("ppfpp", nil),
		"once":     history("f", nil),
	})
	want := []struct {
		target string
		flips  int
		score  float64
	}{{"clock", 4, 1}, {"blip", 2, 0.5}, {"redesign", 1, 1.0 / 3}, {"once", 0, 0}, {"steady", 0, 0}}
	if len(got) != len(want) {
		t.Fatalf("%d targets", len(got))
	}
	for i, w := range want {
		if got[i].Target != w.target || got[i].Flips != w.flips || got[i].Score != w.score {
			t.Errorf("#%d: %s flips %d score %.3f; want %s %d %.3f", i, got[i].Target, got[i].Flips, got[i].Score, w.target, w.flips, w.score)
		}
	}
}
