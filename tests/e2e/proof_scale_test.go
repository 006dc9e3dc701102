package e2e

import (
	"os"
	"testing"
)

// The proofs (TestStorageGrowsWithChange, TestDashboardThumbnailBytes)
// run at two scales. `make test` runs them small, asserting the same
// properties in well under a minute each; SNAPQ_PROOF_SCALE=full (`make
// proofs`) runs them at the issue's scale: 50 pages x 10 runs, two
// 2,000-job batches.
const proofScaleEnv = "SNAPQ_PROOF_SCALE"

// proofScale is the proof's size: small unless SNAPQ_PROOF_SCALE=full.
func proofScale[T any](t *testing.T, small, full T) T {
	t.Helper()
	switch v := os.Getenv(proofScaleEnv); v {
	case "full":
		t.Logf("%s=full: the issue's scale", proofScaleEnv)
		return full
	case "", "small":
		return small
	default:
		t.Fatalf("%s=%q: want full or small (the default)", proofScaleEnv, v)
		return small
	}
}
