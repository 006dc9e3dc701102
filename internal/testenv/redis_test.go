package testenv

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func leaseOwner(t *testing.T, db int) (string, time.Duration) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: RedisAddr})
	defer rdb.Close()
	ctx := context.Background()
	key := leasePrefix + strconv.Itoa(db)
	owner, err := rdb.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return "", 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return owner, rdb.PTTL(ctx, key).Val()
}

func TestRedisHandsOutDistinctEmptyDatabases(t *testing.T) {
	a, b := Redis(t), Redis(t)
	if a.DB == 0 || b.DB == 0 || a.DB == b.DB {
		t.Fatalf("got databases %d and %d, want two different ones other than 0", a.DB, b.DB)
	}
	ctx := context.Background()
	rdb := redis.NewClient(a.Options())
	defer rdb.Close()
	if n := rdb.DBSize(ctx).Val(); n != 0 {
		t.Fatalf("a claimed database holds %d keys, want 0", n)
	}
	for _, d := range []*RedisDB{a, b} {
		owner, ttl := leaseOwner(t, d.DB)
		if owner != d.owner || ttl <= 0 || ttl > leaseTTL {
			t.Fatalf("lease of db %d: owner %q ttl %s, want %q with a TTL up to %s", d.DB, owner, ttl, d.owner, leaseTTL)
		}
	}
	if want := "redis://" + RedisAddr + "/" + strconv.Itoa(a.DB); a.URL() != want {
		t.Fatalf("URL() = %q, want %q", a.URL(), want)
	}

	a.Release()
	a.Release() // twice is harmless
	if owner, _ := leaseOwner(t, a.DB); owner == a.owner {
		t.Fatalf("db %d is still leased to %q after Release", a.DB, owner)
	}
}

func TestRedisReleaseLeavesAnotherOwnersLease(t *testing.T) {
	d := Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: RedisAddr})
	defer rdb.Close()
	ctx := context.Background()
	key := leasePrefix + strconv.Itoa(d.DB)
	// As if the lease had expired and another run had claimed the database.
	if err := rdb.Set(ctx, key, "someone else", leaseTTL).Err(); err != nil {
		t.Fatal(err)
	}
	defer releaseScript.Run(ctx, rdb, []string{key}, "someone else") // before rdb.Close
	d.Release()
	if owner, _ := leaseOwner(t, d.DB); owner != "someone else" {
		t.Fatalf("lease of db %d after Release by a former owner: %q, want it left to %q", d.DB, owner, "someone else")
	}
}

func TestRedisFailsClearlyWhenEveryDatabaseIsLeased(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: RedisAddr})
	defer rdb.Close()
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		Unavailable(t, "redis", err)
	}
	// Claim everything free, briefly: other runs wait for a database meanwhile.
	var held []*RedisDB
	defer func() {
		for _, d := range held {
			d.Release()
		}
	}()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		d, err := ClaimRedisDB(ctx, t.Name())
		cancel()
		var busy *AllLeasedError
		if errors.As(err, &busy) {
			if len(busy.Holders) == 0 {
				t.Fatalf("AllLeasedError names no holders: %v", err)
			}
			t.Log(err)
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, d)
		if len(held) > 1024 {
			t.Fatal("claimed 1024 databases without running out")
		}
	}
}
