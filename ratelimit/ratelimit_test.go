package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/snapq/snapq/internal/testenv"
)

func setup(t *testing.T) redis.UniversalClient {
	t.Helper()
	rdb := redis.NewClient(testenv.Redis(t).Options())
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func TestBurstThenRefused(t *testing.T) {
	rdb := setup(t)
	l := New(rdb, 2, 5) // 2/s, burst 5
	key := "test-" + testenv.RandomSuffix(4)
	ctx := context.Background()
	for i := range 5 {
		ok, _, err := l.Allow(ctx, key)
		if err != nil || !ok {
			t.Fatalf("request %d of the burst refused: %v", i+1, err)
		}
	}
	ok, retry, err := l.Allow(ctx, key)
	if err != nil || ok {
		t.Fatalf("request past the burst allowed (err %v)", err)
	}
	if retry <= 0 || retry > time.Second {
		t.Fatalf("retry after %s, want (0, 500ms]", retry)
	}
	// Another key has its own budget.
	if ok, _, _ := l.Allow(ctx, key+"-other"); !ok {
		t.Fatal("another key was refused")
	}
	time.Sleep(retry + 20*time.Millisecond)
	if ok, _, _ := l.Allow(ctx, key); !ok {
		t.Fatal("refused after waiting Retry-After")
	}
}

func TestDisabled(t *testing.T) {
	l := New(nil, 0, 0)
	for range 100 {
		if ok, _, err := l.Allow(context.Background(), "k"); !ok || err != nil {
			t.Fatal("a disabled limiter refused")
		}
	}
}

// Blocked reports, without counting, whether a key is past its limit.
func TestBlockedDoesNotCount(t *testing.T) {
	rdb := setup(t)
	l := New(rdb, 0.1, 3) // one per 10 s, burst 3
	key := "fail-" + testenv.RandomSuffix(4)
	ctx := context.Background()
	for i := range 3 {
		blocked, _, err := l.Blocked(ctx, key)
		if err != nil || blocked {
			t.Fatalf("before failure %d: blocked %v, %v", i+1, blocked, err)
		}
		if ok, _, err := l.Allow(ctx, key); !ok || err != nil {
			t.Fatalf("failure %d refused: %v", i+1, err)
		}
	}
	for range 5 {
		blocked, retry, err := l.Blocked(ctx, key)
		if err != nil || !blocked || retry <= 0 || retry > 10*time.Second {
			t.Fatalf("past the burst: blocked %v retry %s, %v; want blocked, retry in (0, 10s]", blocked, retry, err)
		}
	}
	if blocked, _, _ := l.Blocked(ctx, key+"-other"); blocked {
		t.Fatal("another key is blocked")
	}
	if blocked, _, err := New(nil, 0, 0).Blocked(ctx, key); blocked || err != nil {
		t.Fatal("a disabled limiter blocks")
	}
}

// On a Redis Cluster the limiter's keys carry a hash tag and its scripts run
// as on a single Redis: the burst is allowed, the next request refused.
func TestOnCluster(t *testing.T) {
	cl := testenv.StartCluster(t)
	rdb := cl.Client()
	defer rdb.Close()
	l := New(rdb, 1, 3)
	if got := l.Key("ip:127.0.0.1"); got != "snapq:rate:{ip:127.0.0.1}" {
		t.Errorf("Key = %q, want the client key as the hash tag", got)
	}
	ctx := context.Background()
	for _, key := range []string{"k1", "k2", "k3", "authfail:ip:::1"} {
		for i := range 3 {
			if ok, _, err := l.Allow(ctx, key); err != nil || !ok {
				t.Fatalf("%s: request %d of the burst refused: %v", key, i+1, err)
			}
		}
		if blocked, _, err := l.Blocked(ctx, key); err != nil || !blocked {
			t.Fatalf("%s: Blocked after the burst = %v, %v", key, blocked, err)
		}
		if ok, retry, err := l.Allow(ctx, key); err != nil || ok || retry <= 0 {
			t.Fatalf("%s: past the burst: allowed %v, retry %s, %v", key, ok, retry, err)
		}
	}
}
