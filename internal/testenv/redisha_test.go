package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Sentinel group fails over on request: a client of the sentinels writes
// before and after, and the other server is master afterwards.
func TestSentinelGroupFailover(t *testing.T) {
	start := time.Now()
	g := StartSentinelGroup(t)
	t.Logf("group up in %s", time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addrs := make([]string, len(g.Sentinels))
	for i, s := range g.Sentinels {
		addrs[i] = s.Addr
	}
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: SentinelMaster, SentinelAddrs: addrs})
	defer c.Close()
	if err := c.Set(ctx, "k", "before", 0).Err(); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	nm, err := g.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if nm != g.Replica.Addr {
		t.Fatalf("new master %s, want the replica %s", nm, g.Replica.Addr)
	}
	t.Logf("failover in %s", time.Since(start).Round(time.Millisecond))
	// The failover client follows the sentinels to the new master (a write
	// in the moment of the switch may still land on the old one and be lost).
	r := g.Replica.Client()
	defer r.Close()
	for {
		if c.Set(ctx, "k", "after", 0).Err() == nil {
			if v, _ := r.Get(ctx, "k").Result(); v == "after" {
				break
			}
		}
		if ctx.Err() != nil {
			t.Fatal("the client never wrote to the new master")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The cluster spreads keys over three nodes and runs a multi-key script on
// keys with one hash tag.
func TestClusterUp(t *testing.T) {
	start := time.Now()
	cl := StartCluster(t)
	t.Logf("cluster up in %s", time.Since(start).Round(time.Millisecond))
	c := cl.Client()
	defer c.Close()
	ctx := context.Background()
	s := redis.NewScript(`redis.call("SET", KEYS[1], "a") redis.call("SET", KEYS[2], "b") return 1`)
	if err := s.Run(ctx, c, []string{"x:{t}:1", "x:{t}:2"}).Err(); err != nil {
		t.Fatal(err)
	}
	masters := 0
	err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { masters++; return m.Ping(ctx).Err() })
	if err != nil || masters != 3 {
		t.Fatalf("%d masters, %v", masters, err)
	}
}
