// Package ratelimit is a per-key request rate limit in Redis using GCRA
// (the generic cell rate algorithm, as in go-redis/redis_rate): one key per
// client, one atomic script call per request, state that expires on its own.
// Several api replicas share the limit because they share Redis.
package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Limiter allows Rate requests per second per key, with bursts of Burst.
type Limiter struct {
	rdb    redis.UniversalClient
	rate   float64
	burst  int
	prefix string
}

// New returns a limiter. rate <= 0 disables it (every request is allowed).
func New(rdb redis.UniversalClient, rate float64, burst int) *Limiter {
	if burst < 1 {
		burst = 1
	}
	return &Limiter{rdb: rdb, rate: rate, burst: burst, prefix: "snapq:rate:"}
}

// Limits reports the rate (requests per second; 0: no limit) and the burst,
// for GET /v1/key.
func (l *Limiter) Limits() (rate float64, burst int) {
	if l.rate <= 0 {
		return 0, l.burst
	}
	return l.rate, l.burst
}

// Key is the Redis key of a client's state: the client key inside a hash tag
// ({…}), so on a Redis Cluster everything snapq keeps about one client lives
// in one slot and a script may touch several of its keys. Braces in key are
// dropped so they cannot move the tag.
func (l *Limiter) Key(key string) string {
	return l.prefix + "{" + strings.NewReplacer("{", "", "}", "").Replace(key) + "}"
}

// gcra keeps the "theoretical arrival time" of the next request per key.
// Returns {allowed (0/1), seconds to wait as a string}.
var gcra = redis.NewScript(`
local key = KEYS[1]
local burst = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local t = redis.call("TIME")
local now = (tonumber(t[1]) - 1700000000) + tonumber(t[2]) / 1000000
local tat = tonumber(redis.call("GET", key) or now)
if tat < now then tat = now end
local new_tat = tat + interval
local allow_at = new_tat - interval * burst
if now < allow_at then
  return {0, tostring(allow_at - now)}
end
redis.call("SET", key, tostring(new_tat), "EX", math.ceil(new_tat - now) + 1)
return {1, "0"}
`)

// Allow counts one request for key. When it is refused, retryAfter says
// when the next one would be allowed.
func (l *Limiter) Allow(ctx context.Context, key string) (allowed bool, retryAfter time.Duration, err error) {
	if l == nil || l.rate <= 0 {
		return true, 0, nil
	}
	return l.run(ctx, gcra, key)
}

// run runs one of the scripts for key; both answer {flag (0/1), seconds to wait}.
func (l *Limiter) run(ctx context.Context, script *redis.Script, key string) (flag bool, wait time.Duration, err error) {
	res, err := script.Run(ctx, l.rdb, []string{l.Key(key)}, l.burst, 1/l.rate).Slice()
	if err != nil {
		return false, 0, fmt.Errorf("rate limit: %w", err)
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("rate limit: unexpected reply %v", res)
	}
	f, _ := res[0].(int64)
	secs, _ := strconv.ParseFloat(fmt.Sprint(res[1]), 64)
	return f == 1, time.Duration(secs * float64(time.Second)), nil
}

// peek answers whether the next request for a key would be refused, without
// counting it: {blocked (0/1), seconds to wait as a string}.
var peek = redis.NewScript(`
local key = KEYS[1]
local burst = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local t = redis.call("TIME")
local now = (tonumber(t[1]) - 1700000000) + tonumber(t[2]) / 1000000
local tat = tonumber(redis.call("GET", key) or now)
if tat < now then tat = now end
local allow_at = tat + interval - interval * burst
if now < allow_at then
  return {1, tostring(allow_at - now)}
end
return {0, "0"}
`)

// Blocked reports whether Allow would refuse key now, without counting a
// request: for limits on failures, checked before the attempt and counted
// (Allow) only when it fails.
func (l *Limiter) Blocked(ctx context.Context, key string) (blocked bool, retryAfter time.Duration, err error) {
	if l == nil || l.rate <= 0 {
		return false, 0, nil
	}
	return l.run(ctx, peek, key)
}
