package capture

import (
	"context"
	"testing"
	"time"
)

// A reserved tab stays free for interactive captures while batch captures
// hold all the others.
func TestLaneKeepsReservedTabs(t *testing.T) {
	t.Parallel()
	b := unstartedBrowser(Config{Tabs: 2, InteractiveTabs: 1}.withDefaults())
	leave, err := b.enterLane(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer leave()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := b.enterLane(ctx); err == nil {
		t.Fatal("a second batch capture entered; want it to wait while the other tab is reserved")
	}
	leaveI, err := b.enterLane(WithInteractive(context.Background()))
	if err != nil {
		t.Fatalf("interactive capture: %v", err)
	}
	leaveI()
	for _, tc := range []struct {
		name        string
		tabs, inter int
		ok          bool
	}{{"none", 2, 0, true}, {"one of two", 2, 1, true}, {"all", 2, 2, false}, {"negative", 2, -1, false}} {
		if err := (Config{Tabs: tc.tabs, InteractiveTabs: tc.inter}).validateLane(); (err == nil) != tc.ok {
			t.Errorf("%s: validateLane = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
