package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Budget is the one admission check of the work an API key makes the api do outside
// the capture queue (sitemap reads, discovery crawls, rule previews, auth tests, archive
// builds, event streams): each kind of work has a cap of pieces running at once per key,
// counted across every api replica on the Redis (leases in a sorted set per key and kind,
// as HostSemaphore's: renewed while held, reclaimed after the TTL when a replica dies),
// and a cap per replica, counted in this process. Acquire answers at once: a piece over
// either cap is refused with a *BudgetError, never queued, so a refused request costs one
// Redis round trip and no work.
type Budget struct {
	sem  *HostSemaphore // nil: the per-key caps are counted per replica (tests, no Redis)
	caps map[string]Cap

	mu    sync.Mutex
	local map[string]int // pieces of each kind running in this replica
	keys  map[string]int // without Redis: pieces per key and kind in this replica
}

// Cap is one kind of work's limits. Zero PerKey or PerReplica: no cap of that scope.
type Cap struct {
	PerKey     int           // pieces running at once for one key, across replicas
	PerReplica int           // pieces running at once in one replica, all keys
	RetryAfter time.Duration // the Retry-After of a refusal (default 5 s)
}

// BudgetError is a refused Acquire: Scope is "key" (the key has Limit pieces of Kind
// running) or "replica" (this replica has).
type BudgetError struct {
	Kind       string
	Scope      string
	Limit      int
	RetryAfter time.Duration
}

// Budget scopes.
const (
	ScopeKey     = "key"
	ScopeReplica = "replica"
)

// ErrBudget matches every *BudgetError (errors.Is).
var ErrBudget = errors.New("over the work budget")

func (e *BudgetError) Error() string {
	if e.Scope == ScopeReplica {
		return fmt.Sprintf("this server runs as many %s requests at once as it allows (%d); retry later", e.Kind, e.Limit)
	}
	return fmt.Sprintf("this API key already has %d %s requests running, its limit; retry when one has finished", e.Limit, e.Kind)
}

// Is makes errors.Is(err, ErrBudget) true.
func (e *BudgetError) Is(target error) bool { return target == ErrBudget }

// BudgetRefusal describes the refusal for the API's error writer.
func (e *BudgetError) BudgetRefusal() (kind, scope string, limit int, retryAfter time.Duration) {
	return e.Kind, e.Scope, e.Limit, e.RetryAfter
}

// NewBudget returns a budget with caps per kind of work; rdb nil counts the per-key caps
// in this process only. A kind missing from caps is not capped.
func NewBudget(rdb redis.UniversalClient, caps map[string]Cap) *Budget {
	b := &Budget{caps: caps, local: map[string]int{}, keys: map[string]int{}}
	if rdb != nil {
		b.sem = NewHostSemaphore(rdb)
	}
	return b
}

// BudgetKey is the Redis key of owner's leases of kind: the owner inside a hash tag, as
// Limiter.Key, so everything about one client stays on one Redis Cluster slot.
func BudgetKey(owner, kind string) string {
	if owner == "" {
		owner = "anonymous"
	}
	return "snapq:budget:{" + strings.NewReplacer("{", "", "}", "").Replace(owner) + "}:" + kind
}

// Acquire admits one piece of kind for owner (an API key id, "" without auth) or refuses
// it with a *BudgetError; any other error is Redis's. release gives the slots back (once;
// more calls do nothing). The lease lives until release or ctx's end.
func (b *Budget) Acquire(ctx context.Context, owner, kind string) (release func(), err error) {
	c := b.caps[kind]
	// The key's cap first: a key's refused requests never hold the replica's slots,
	// even for a moment, so one key's burst cannot make the replica busy for others.
	freeKey, err := b.takeKey(ctx, owner, kind, c)
	if err != nil {
		return nil, err
	}
	if !b.takeLocal(kind, "", c.PerReplica) {
		freeKey()
		return nil, b.refuse(kind, ScopeReplica, c)
	}
	return onceFunc(func() { freeKey(); b.giveLocal(kind, "") }), nil
}

// takeKey takes one of owner's c.PerKey slots of kind: in Redis, or in this process
// without one.
func (b *Budget) takeKey(ctx context.Context, owner, kind string, c Cap) (func(), error) {
	if c.PerKey <= 0 {
		return func() {}, nil
	}
	if b.sem == nil {
		k := "key:" + owner
		if !b.takeLocal(kind, k, c.PerKey) {
			return nil, b.refuse(kind, ScopeKey, c)
		}
		return func() { b.giveLocal(kind, k) }, nil
	}
	rel, ok, err := b.sem.acquireKey(ctx, []string{BudgetKey(owner, kind)}, c.PerKey, 0, acquireScript, newToken())
	if err != nil {
		return nil, fmt.Errorf("work budget: %w", err)
	}
	if !ok {
		return nil, b.refuse(kind, ScopeKey, c)
	}
	return rel, nil
}

func (b *Budget) refuse(kind, scope string, c Cap) error {
	limit := c.PerKey
	if scope == ScopeReplica {
		limit = c.PerReplica
	}
	retry := c.RetryAfter
	if retry <= 0 {
		retry = 5 * time.Second
	}
	return &BudgetError{Kind: kind, Scope: scope, Limit: limit, RetryAfter: retry}
}

// takeLocal counts one piece of kind (for owner, or for the replica when owner is "")
// unless limit are counted; limit <= 0 always takes.
func (b *Budget) takeLocal(kind, owner string, limit int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, k := b.local, kind
	if owner != "" {
		m, k = b.keys, owner+"\x00"+kind
	}
	if limit > 0 && m[k] >= limit {
		return false
	}
	m[k]++
	return true
}

func (b *Budget) giveLocal(kind, owner string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, k := b.local, kind
	if owner != "" {
		m, k = b.keys, owner+"\x00"+kind
	}
	if m[k]--; m[k] <= 0 {
		delete(m, k)
	}
}

// InUse reports the pieces of kind running in this replica (for metrics and tests).
func (b *Budget) InUse(kind string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.local[kind]
}

func onceFunc(f func()) func() {
	var once sync.Once
	return func() { once.Do(f) }
}
