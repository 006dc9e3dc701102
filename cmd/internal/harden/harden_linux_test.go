package harden

import "testing"

func TestNotDumpable(t *testing.T) {
	if err := NotDumpable(); err != nil {
		t.Fatal(err)
	}
	if got, err := dumpable(); err != nil || got != 0 {
		t.Fatalf("PR_GET_DUMPABLE = %d, %v; want 0", got, err)
	}
}
