package ratelimit

import (
	"context"
	cryptorand "crypto/rand"
	"encoding/hex"
	"time"

	"github.com/redis/go-redis/v9"
)

// Flight is a lock shared by every process on the Redis: one holder per key
// (SET NX PX with a random token). The holder gives it back with release; a
// holder that dies loses it after the TTL. authprofile's single-flight
// re-login takes it per profile.
type Flight struct {
	rdb redis.UniversalClient
}

// NewFlight returns a lock on rdb.
func NewFlight(rdb redis.UniversalClient) *Flight { return &Flight{rdb: rdb} }

// unlockScript deletes KEYS[1] only while it still holds this holder's token.
var unlockScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0
`)

// TryLock takes key for ttl when no one holds it.
func (f *Flight) TryLock(ctx context.Context, key string, ttl time.Duration) (func(), bool, error) {
	b := make([]byte, 16)
	_, _ = cryptorand.Read(b)
	token := hex.EncodeToString(b)
	ok, err := f.rdb.SetNX(ctx, key, token, ttl).Result()
	if err != nil || !ok {
		return nil, false, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = unlockScript.Run(ctx, f.rdb, []string{key}, token).Err()
	}, true, nil
}
