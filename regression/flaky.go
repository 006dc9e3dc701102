package regression

import (
	"sort"
	"time"
)

// Flakiness: which targets of a suite change between runs without anyone
// approving a change — the ones a team learns to ignore, and so the ones to
// fix (a dynamic region to ignore, a wait to add).

// DefaultFlakinessRuns and MaxFlakinessRuns bound how many of a suite's
// newest finished runs a flakiness report reads.
const (
	DefaultFlakinessRuns = 20
	MaxFlakinessRuns     = 200
)

// TargetRun is how one target came out of one finished run: the worst status
// of its comparisons (error, failed, missing, new, passed in that order), the
// largest diff ratio, and whether a reviewer approved every comparison of it
// that did not pass.
type TargetRun struct {
	RunID     string
	CreatedAt time.Time
	Status    CompareStatus
	MaxRatio  float64
	Approved  bool
}

// passed reports whether the target matched its baselines in that run.
func (t TargetRun) passed() bool { return t.Status == ComparePassed }

// TargetFlakiness is one target's history and flake score.
type TargetFlakiness struct {
	Target string
	// Runs is the history, newest first.
	Runs []TargetRun
	// Flips counts consecutive runs whose outcome (passed or not) changed
	// where the older run was not approved: a real change approved once
	// costs no flip on the way back to passing; a page that alternates
	// flips on every run.
	Flips int
	// Score is Flips over the transitions the history has (0 with fewer than
	// two runs): 0 steady, 1 changing on every run.
	Score float64
}

// Flakiness scores every target of a history (each target's runs newest
// first) and returns them flakiest first (then more flips, then by name).
func Flakiness(history map[string][]TargetRun) []TargetFlakiness {
	out := make([]TargetFlakiness, 0, len(history))
	for target, runs := range history {
		f := TargetFlakiness{Target: target, Runs: runs}
		for i := 0; i+1 < len(runs); i++ {
			newer, older := runs[i], runs[i+1]
			if newer.passed() != older.passed() && !older.Approved {
				f.Flips++
			}
		}
		if len(runs) > 1 {
			f.Score = float64(f.Flips) / float64(len(runs)-1)
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if a.Flips != b.Flips {
			return a.Flips > b.Flips
		}
		return a.Target < b.Target
	})
	return out
}
