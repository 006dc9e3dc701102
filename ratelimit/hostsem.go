package ratelimit

import (
	"context"
	cryptorand "crypto/rand"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// HostSemaphore caps the captures of one target host running at once across
// every worker that shares the Redis. Each host has one sorted set,
// snapq:{host:<host>}:sem, of lease tokens scored by their expiry (the hash
// tag keeps a host's keys on one Redis Cluster slot), and a second one,
// snapq:{host:<host>}:first, of the AcquireFirst callers waiting for a slot,
// who go ahead of Acquire's. A holder renews its lease every TTL/3 while it works; a holder
// that dies stops renewing and its slot is reclaimed by the next acquire
// after at most TTL, so a killed worker cannot leak a slot.
type HostSemaphore struct {
	rdb redis.UniversalClient
	// TTL is a lease's life without renewal (default DefaultLeaseTTL).
	TTL time.Duration
	// Poll is the pause between two tries while waiting (default 100 ms,
	// with jitter).
	Poll time.Duration
}

// DefaultLeaseTTL is HostSemaphore.TTL when none is set.
const DefaultLeaseTTL = 30 * time.Second

// NewHostSemaphore returns a semaphore on rdb with the default lease TTL.
func NewHostSemaphore(rdb redis.UniversalClient) *HostSemaphore {
	return &HostSemaphore{rdb: rdb, TTL: DefaultLeaseTTL}
}

// HostKey is the Redis key of host's semaphore.
func HostKey(host string) string { return "snapq:{host:" + host + "}:sem" }

// firstKey is the sorted set of the callers of AcquireFirst waiting for
// host's slot, scored by when their wait lapses (same hash tag as HostKey).
func firstKey(host string) string { return "snapq:{host:" + host + "}:first" }

// acquireScript drops expired leases, then adds ARGV[2] with expiry now +
// ARGV[3] ms if fewer than ARGV[1] leases remain. With KEYS[2] (the host's
// firstKey), the callers of AcquireFirst still waiting count as leases:
// they take the next free slots. Returns 1 when it did.
var acquireScript = redis.NewScript(`
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local ttl = tonumber(ARGV[3])
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call("ZREMRANGEBYSCORE", key, "-inf", now)
local n = redis.call("ZCARD", key)
if KEYS[2] then
  redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", now)
  n = n + redis.call("ZCARD", KEYS[2])
end
if n >= limit then
  return 0
end
redis.call("ZADD", key, now + ttl, ARGV[2])
redis.call("PEXPIRE", key, ttl + 1000)
return 1
`)

// firstScript is acquireScript for AcquireFirst: the waiting callers
// (KEYS[2]) do not count against ARGV[2] itself; when no slot is free it
// stays in KEYS[2] until now + ARGV[4] ms (its next try renews that).
var firstScript = redis.NewScript(`
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local ttl = tonumber(ARGV[3])
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call("ZREMRANGEBYSCORE", key, "-inf", now)
redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", now)
if redis.call("ZCARD", key) >= limit then
  local lapse = tonumber(ARGV[4])
  redis.call("ZADD", KEYS[2], now + lapse, ARGV[2])
  redis.call("PEXPIRE", KEYS[2], lapse + 1000)
  return 0
end
redis.call("ZREM", KEYS[2], ARGV[2])
redis.call("ZADD", key, now + ttl, ARGV[2])
redis.call("PEXPIRE", key, ttl + 1000)
return 1
`)

// renewScript pushes ARGV[1]'s expiry to now + ARGV[2] ms if it still holds
// a lease. Returns 1 when it did.
var renewScript = redis.NewScript(`
local key = KEYS[1]
local ttl = tonumber(ARGV[2])
if not redis.call("ZSCORE", key, ARGV[1]) then
  return 0
end
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call("ZADD", key, "XX", now + ttl, ARGV[1])
if redis.call("PTTL", key) < ttl + 1000 then
  redis.call("PEXPIRE", key, ttl + 1000)
end
return 1
`)

// Acquire implements jobs.HostSlots: it takes one of host's limit slots,
// trying again every Poll for up to wait. While held, the lease is renewed
// in the background until release is called or ctx ends.
func (s *HostSemaphore) Acquire(ctx context.Context, host string, limit int, wait time.Duration) (release func(), ok bool, err error) {
	if limit <= 0 {
		return func() {}, true, nil
	}
	return s.acquireKey(ctx, []string{HostKey(host), firstKey(host)}, limit, wait, acquireScript, newToken())
}

// AcquireFirst implements jobs.FirstHostSlots: Acquire for work somebody
// waits for (the interactive lane). While it waits it is registered as a
// waiter of the host, and Acquire's callers take a slot only when the leases
// and these waiters together are under the limit: the next slot that comes
// free is its (it tries four times as often as Acquire). Each caller's limit
// holds for its own acquire: leases never exceed the limit of the caller that
// took the last one, so a caller of AcquireFirst with a higher limit than
// Acquire's (an interactive job's headroom above the host's cap) can take the
// slots above the lower limit, which Acquire's callers never take. A waiter
// that died drops out after a few of its polls.
func (s *HostSemaphore) AcquireFirst(ctx context.Context, host string, limit int, wait time.Duration) (release func(), ok bool, err error) {
	if limit <= 0 {
		return func() {}, true, nil
	}
	keys := []string{HostKey(host), firstKey(host)}
	token := newToken()
	release, ok, err = s.acquireKey(ctx, keys, limit, wait, firstScript, token)
	if !ok {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		s.rdb.ZRem(rctx, keys[1], token) //nolint:errcheck // unremoved, it lapses after a few polls
	}
	return release, ok, err
}

// acquireKey takes one of limit leases of the sorted set keys[0] (HostKey,
// BudgetKey) for token with script (acquireScript, or firstScript and a
// pause a quarter as long), trying again for up to wait, and renews it while
// held.
func (s *HostSemaphore) acquireKey(ctx context.Context, keys []string, limit int, wait time.Duration, script *redis.Script, token string) (release func(), ok bool, err error) {
	ttl := s.ttl()
	deadline := time.Now().Add(wait)
	poll := s.poll()
	if script == firstScript {
		poll /= 4
	}
	lapse := 3 * 2 * poll // three of the longest pauses
	for {
		got, err := script.Run(ctx, s.rdb, keys, limit, token, ttl.Milliseconds(), lapse.Milliseconds()+1).Int()
		if err != nil {
			return nil, false, fmt.Errorf("semaphore %s: %w", keys[0], err)
		}
		if got == 1 {
			return s.hold(ctx, keys[0], token, ttl), true, nil
		}
		pause := poll + time.Duration(rand.Int64N(int64(poll)))
		if time.Now().Add(pause).After(deadline) {
			return nil, false, nil
		}
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-time.After(pause):
		}
	}
}

// hold renews the lease every ttl/3 until release or ctx's end, and returns
// release, which stops renewing and removes the lease.
func (s *HostSemaphore) hold(ctx context.Context, key, token string, ttl time.Duration) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				rctx, cancel := context.WithTimeout(ctx, ttl/3)
				renewScript.Run(rctx, s.rdb, []string{key}, token, ttl.Milliseconds()) //nolint:errcheck // the next tick tries again
				cancel()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-stopped
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			s.rdb.ZRem(rctx, key, token) //nolint:errcheck // unremoved, it expires after ttl
		})
	}
}

func (s *HostSemaphore) ttl() time.Duration {
	if s.TTL > 0 {
		return s.TTL
	}
	return DefaultLeaseTTL
}

func (s *HostSemaphore) poll() time.Duration {
	if s.Poll > 0 {
		return s.Poll
	}
	return 100 * time.Millisecond
}

func newToken() string {
	var b [16]byte
	if _, err := cryptorand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b[:])
}
