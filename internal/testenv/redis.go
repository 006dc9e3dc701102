package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisAddr is the machine's shared Redis, the one scripts/services.sh starts.
const RedisAddr = "127.0.0.1:6379"

const (
	// leasePrefix names the lease keys, kept in database 0: snapq:testenv:db:<n>.
	leasePrefix = "snapq:testenv:db:"
	// leaseTTL bounds how long a crashed test run keeps a database; a live
	// lease is renewed every leaseTTL/3.
	leaseTTL = 60 * time.Second
	// claimWait is how long Redis(t) waits for another run to free a database.
	claimWait = 2 * time.Minute
	// defaultDatabases is Redis's default `databases`, used when CONFIG GET is refused.
	defaultDatabases = 16
)

// Release and renew only the lease this owner holds: a lease that expired and
// was claimed by another run is left alone.
var (
	releaseScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)
	renewScript   = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end return 0`)
)

// RedisDB is a database of the shared Redis leased to one user, empty when
// handed out. Database 0 is never handed out: it holds the leases, and the
// local stack (make up) keeps its queue there.
type RedisDB struct {
	Addr  string
	DB    int
	owner string
	stop  chan struct{}
	once  sync.Once
	done  chan struct{}
}

// URL is the database as SNAPQ_REDIS_URL wants it.
func (d *RedisDB) URL() string { return fmt.Sprintf("redis://%s/%d", d.Addr, d.DB) }

// Options are go-redis client options for the database.
func (d *RedisDB) Options() *redis.Options { return &redis.Options{Addr: d.Addr, DB: d.DB} }

// Release gives the database back; it is safe to call more than once.
func (d *RedisDB) Release() {
	d.once.Do(func() {
		close(d.stop)
		<-d.done
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rdb := redis.NewClient(&redis.Options{Addr: d.Addr})
		defer rdb.Close()
		_ = releaseScript.Run(ctx, rdb, []string{leasePrefix + strconv.Itoa(d.DB)}, d.owner).Err()
	})
}

// Redis leases a Redis database for the test, flushed, and gives it back in
// t.Cleanup. No other test holds it meanwhile, in this test binary or in any
// other one running against the same Redis. It waits up to two minutes for a
// free database, then fails the test naming who holds them.
func Redis(t testing.TB) *RedisDB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), claimWait)
	defer cancel()
	d, err := ClaimRedisDB(ctx, t.Name())
	var busy *AllLeasedError
	switch {
	case errors.As(err, &busy):
		t.Fatal(err)
	case err != nil:
		Unavailable(t, "redis", err)
	}
	t.Cleanup(d.Release)
	return d
}

// ClaimRedisDB leases a free database of the Redis at RedisAddr for owner (a
// test or program name, for the error another claimant sees) and flushes it.
// A lease is a key snapq:testenv:db:<n> in database 0, set with NX and a TTL
// that a goroutine renews until Release, so a crashed run frees its database
// within a minute. When every database is leased it polls until ctx ends and
// then returns an *AllLeasedError.
func ClaimRedisDB(ctx context.Context, owner string) (*RedisDB, error) {
	leases := redis.NewClient(&redis.Options{Addr: RedisAddr})
	defer leases.Close()
	if err := leases.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("ping %s: %w", RedisAddr, err)
	}
	n := defaultDatabases
	if cfg, err := leases.ConfigGet(ctx, "databases").Result(); err == nil {
		if v, err := strconv.Atoi(cfg["databases"]); err == nil {
			n = v
		}
	}
	if n < 2 {
		return nil, fmt.Errorf("redis at %s has %d database(s); tests need at least 2 (0 holds the leases)", RedisAddr, n)
	}
	host, _ := os.Hostname()
	value := fmt.Sprintf("%s pid %d on %s (%s)", owner, os.Getpid(), host, RandomSuffix(4))
	for {
		for db := 1; db < n; db++ {
			ok, err := leases.SetNX(ctx, leasePrefix+strconv.Itoa(db), value, leaseTTL).Result()
			if err != nil && ctx.Err() != nil {
				return nil, allLeased(leases, n)
			}
			if err != nil {
				return nil, fmt.Errorf("lease redis db %d: %w", db, err)
			}
			if !ok {
				continue
			}
			d := &RedisDB{Addr: RedisAddr, DB: db, owner: value, stop: make(chan struct{}), done: make(chan struct{})}
			go d.renew()
			rdb := redis.NewClient(d.Options())
			err = rdb.FlushDB(ctx).Err()
			rdb.Close()
			if err != nil {
				d.Release()
				return nil, fmt.Errorf("flush redis db %d: %w", db, err)
			}
			return d, nil
		}
		select {
		case <-ctx.Done():
			return nil, allLeased(leases, n)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// renew keeps the lease alive until Release.
func (d *RedisDB) renew() {
	defer close(d.done)
	rdb := redis.NewClient(&redis.Options{Addr: d.Addr})
	defer rdb.Close()
	tick := time.NewTicker(leaseTTL / 3)
	defer tick.Stop()
	key := leasePrefix + strconv.Itoa(d.DB)
	for {
		select {
		case <-d.stop:
			return
		case <-tick.C:
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = renewScript.Run(ctx, rdb, []string{key}, d.owner, leaseTTL.Milliseconds()).Err()
			cancel()
		}
	}
}

// AllLeasedError says every database but 0 is leased, and to whom.
type AllLeasedError struct {
	Addr    string
	Holders []string // "db N: owner"
}

func (e *AllLeasedError) Error() string {
	return fmt.Sprintf("no free Redis database on %s: databases 1-%d are leased (%s); wait for those test runs to end, or raise `databases` in the Redis config",
		e.Addr, len(e.Holders), strings.Join(e.Holders, "; "))
}

func allLeased(leases *redis.Client, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e := &AllLeasedError{Addr: RedisAddr}
	for db := 1; db < n; db++ {
		owner, err := leases.Get(ctx, leasePrefix+strconv.Itoa(db)).Result()
		if err != nil {
			owner = "?"
		}
		e.Holders = append(e.Holders, fmt.Sprintf("db %d: %s", db, owner))
	}
	return e
}
