package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis topologies of one test, every process on a loopback port of its own
// and stopped in t.Cleanup: a Sentinel group (a master, a replica and three
// sentinels) and a Redis Cluster of three masters. Nothing here touches the
// machine's shared Redis.

// SentinelMaster is the master name the sentinels of StartSentinelGroup monitor.
const SentinelMaster = "snapq"

// SentinelGroup is a master, its replica and three sentinels.
type SentinelGroup struct {
	Master, Replica *RedisServer
	Sentinels       []*RedisServer
}

// StartSentinelGroup starts a master with one replica and three sentinels
// (quorum 2) that fail over 1 s after the master stops answering. Call it
// before starting the processes that use it, so it outlives them.
func StartSentinelGroup(t testing.TB) *SentinelGroup {
	t.Helper()
	persist := []string{"--appendonly", "yes", "--appendfsync", "everysec", "--save", "", "--maxmemory-policy", "noeviction",
		"--repl-diskless-sync-delay", "0"}
	g := &SentinelGroup{Master: startRedisServer(t, "", persist)}
	g.Replica = startRedisServer(t, "", append(persist, "--replicaof", "127.0.0.1", g.Master.port))
	conf := fmt.Sprintf(`sentinel monitor %[1]s 127.0.0.1 %[2]s 2
sentinel down-after-milliseconds %[1]s 1000
sentinel failover-timeout %[1]s 6000
sentinel parallel-syncs %[1]s 1
`, SentinelMaster, g.Master.port)
	for range 3 {
		g.Sentinels = append(g.Sentinels, startRedisServer(t, conf, []string{"--sentinel"}))
	}
	if err := g.waitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	return g
}

// URL is the group as SNAPQ_REDIS_URL wants it.
func (g *SentinelGroup) URL() string {
	addrs := make([]string, len(g.Sentinels))
	for i, s := range g.Sentinels {
		addrs[i] = s.Addr
	}
	return "redis-sentinel://" + strings.Join(addrs, ",") + "/0?master=" + SentinelMaster
}

// MasterAddr asks a sentinel for the current master's address.
func (g *SentinelGroup) MasterAddr(ctx context.Context) (string, error) {
	var err error
	for _, s := range g.Sentinels {
		if s.cmd == nil {
			continue
		}
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
		var a []string
		a, err = sc.GetMasterAddrByName(ctx, SentinelMaster).Result()
		sc.Close()
		if err == nil {
			return a[0] + ":" + a[1], nil
		}
	}
	return "", fmt.Errorf("no sentinel answers: %w", err)
}

// waitReady waits until every sentinel sees the replica and the other
// sentinels, so a failover can be agreed on.
func (g *SentinelGroup) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := g.ready()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sentinel group not ready after %s: %w", timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (g *SentinelGroup) ready() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, s := range g.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
		m, err := sc.Master(ctx, SentinelMaster).Result()
		sc.Close()
		if err != nil {
			return err
		}
		if m["num-slaves"] != "1" || m["num-other-sentinels"] != "2" || m["flags"] != "master" {
			return fmt.Errorf("sentinel %s sees %s replicas, %s other sentinels, flags %s", s.Addr, m["num-slaves"], m["num-other-sentinels"], m["flags"])
		}
	}
	c := g.Replica.Client()
	defer c.Close()
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return err
	}
	if !strings.Contains(info, "master_link_status:up") {
		return errors.New("the replica is not in sync with the master yet")
	}
	return nil
}

// Failover asks a sentinel for a failover (SENTINEL FAILOVER) and waits until
// the sentinels name the other server master and it accepts writes.
func (g *SentinelGroup) Failover(ctx context.Context) (newMaster string, err error) {
	old, err := g.MasterAddr(ctx)
	if err != nil {
		return "", err
	}
	sc := redis.NewSentinelClient(&redis.Options{Addr: g.Sentinels[0].Addr})
	defer sc.Close()
	if err := sc.Failover(ctx, SentinelMaster).Err(); err != nil {
		return "", fmt.Errorf("SENTINEL FAILOVER: %w", err)
	}
	return g.WaitNewMaster(ctx, old)
}

// WaitNewMaster waits until the sentinels name a master other than old and
// it answers as a master.
func (g *SentinelGroup) WaitNewMaster(ctx context.Context, old string) (string, error) {
	for {
		if a, err := g.MasterAddr(ctx); err == nil && a != old {
			c := redis.NewClient(&redis.Options{Addr: a})
			info, err := c.Info(ctx, "replication").Result()
			c.Close()
			if err == nil && strings.Contains(info, "role:master") {
				return a, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no new master after %s: %w", old, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Server returns the group's server at addr (the master or the replica).
func (g *SentinelGroup) Server(addr string) *RedisServer {
	if g.Master.Addr == addr {
		return g.Master
	}
	return g.Replica
}

// Cluster is a Redis Cluster of three masters (no replicas).
type Cluster struct {
	Nodes []*RedisServer
}

// StartCluster starts three cluster-enabled redis-servers, joins them with
// redis-cli --cluster create and waits until the cluster is ok on every node.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	cli, err := exec.LookPath(Getenv("SNAPQ_REDIS_CLI_BIN", "redis-cli"))
	if err != nil {
		Unavailable(t, "redis-cli", err)
	}
	c := &Cluster{}
	for range 3 {
		c.Nodes = append(c.Nodes, startRedisServer(t, "", []string{"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "3000",
			"--appendonly", "yes", "--appendfsync", "everysec", "--save", "", "--maxmemory-policy", "noeviction"}))
	}
	args := []string{"--cluster", "create"}
	for _, n := range c.Nodes {
		args = append(args, n.Addr)
	}
	out, err := exec.Command(cli, append(args, "--cluster-replicas", "0", "--cluster-yes")...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.ok()
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster not ok after 30 s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *Cluster) ok() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, n := range c.Nodes {
		cl := n.Client()
		info, err := cl.ClusterInfo(ctx).Result()
		cl.Close()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:3") {
			return fmt.Errorf("node %s: %s", n.Addr, strings.SplitN(info, "\n", 2)[0])
		}
	}
	return nil
}

// Addrs are the nodes' addresses.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr
	}
	return out
}

// URL is the cluster as SNAPQ_REDIS_URL wants it.
func (c *Cluster) URL() string { return "redis-cluster://" + strings.Join(c.Addrs(), ",") }

// Client is a cluster client; the caller closes it.
func (c *Cluster) Client() *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
}

// writeConf writes a config file into dir (sentinels rewrite theirs, so it
// must be a file of their own).
func writeConf(dir, content string) (string, error) {
	p := filepath.Join(dir, "redis.conf")
	return p, os.WriteFile(p, []byte(content), 0o644)
}
