package ratelimit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/snapq/snapq/internal/testenv"
)

// A key at its cap is refused at once with a *BudgetError naming the key scope, in every
// replica sharing the Redis; another key is not; a released slot is free again; the
// replica cap refuses every key.
func TestBudgetPerKeyAcrossReplicas(t *testing.T) {
	rdb := setup(t)
	ctx := context.Background()
	caps := map[string]Cap{"discover": {PerKey: 2, PerReplica: 3, RetryAfter: 7 * time.Second}}
	a, b := NewBudget(rdb, caps), NewBudget(rdb, caps) // two api replicas
	key := "k-" + testenv.RandomSuffix(4)
	r1, err1 := a.Acquire(ctx, key, "discover")
	r2, err2 := b.Acquire(ctx, key, "discover")
	if err1 != nil || err2 != nil {
		t.Fatalf("two of two: %v %v", err1, err2)
	}
	start := time.Now()
	_, err := a.Acquire(ctx, key, "discover")
	var be *BudgetError
	if !errors.As(err, &be) || be.Scope != ScopeKey || be.Limit != 2 || be.RetryAfter != 7*time.Second || !errors.Is(err, ErrBudget) {
		t.Fatalf("third of two: %v (%+v)", err, be)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("a refusal took %s, want at once", d)
	}
	if a.InUse("discover") != 1 {
		t.Fatalf("replica a counts %d after a refusal, want 1", a.InUse("discover"))
	}
	r3, err := a.Acquire(ctx, key+"-other", "discover")
	if err != nil {
		t.Fatalf("another key refused: %v", err)
	}
	r4, err := a.Acquire(ctx, key+"-third", "discover")
	if err != nil {
		t.Fatalf("a third key refused below the replica cap: %v", err)
	}
	if _, err := a.Acquire(ctx, key+"-fourth", "discover"); !errors.As(err, &be) || be.Scope != ScopeReplica || be.Limit != 3 {
		t.Fatalf("past the replica cap: %v", err)
	}
	r1()
	r1() // twice is harmless
	r5, err := b.Acquire(ctx, key, "discover")
	if err != nil {
		t.Fatalf("after a release: %v", err)
	}
	for _, r := range []func(){r2, r3, r4, r5} {
		r()
	}
	if n := rdb.ZCard(ctx, BudgetKey(key, "discover")).Val(); n != 0 {
		t.Fatalf("%d leases left after every release", n)
	}
	if a.InUse("discover")+b.InUse("discover") != 0 {
		t.Fatal("replica counts left after every release")
	}
	// A kind without caps is never refused; without Redis the key cap is per replica.
	if r, err := a.Acquire(ctx, key, "other"); err != nil {
		t.Fatal(err)
	} else {
		r()
	}
	local := NewBudget(nil, map[string]Cap{"x": {PerKey: 1}})
	rl, err := local.Acquire(ctx, "", "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := local.Acquire(ctx, "", "x"); !errors.As(err, &be) || be.Scope != ScopeKey {
		t.Fatalf("local key cap: %v", err)
	}
	rl()
	if rl, err := local.Acquire(ctx, "", "x"); err != nil {
		t.Fatal(err)
	} else {
		rl()
	}
}
