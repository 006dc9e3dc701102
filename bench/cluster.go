package main

// The cluster bench (-cluster): the same batches through two stacks in one
// run, one on a single redis-server (SNAPQ_QUEUE_SHARDS=1, the plain queues)
// and one on a three-master Redis Cluster with the queues in 8 shards. Both
// Redis deployments are the bench's own, on loopback ports. Pages are tiny
// (text output only) so the queue's share of the time is as large as it gets.
// The last line is "bench: cluster: sharded cluster / single redis = R".

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/snapq/snapq/internal/testenv"
)

type clusterOptions struct {
	on     bool
	pages  int
	shards int
}

func (c *clusterOptions) flags() {
	flag.BoolVar(&c.on, "cluster", false, "compare a sharded Redis Cluster with a single Redis instead of the bench")
	flag.IntVar(&c.pages, "cluster-pages", 200, "pages per batch in the cluster bench")
	flag.IntVar(&c.shards, "cluster-shards", 8, "SNAPQ_QUEUE_SHARDS on the cluster")
}

// benchTB lets testenv's process helpers (made for tests) run in the bench:
// Fatal panics with errBenchFatal, cleanups run in close.
type benchTB struct {
	testing.TB
	cleanups []func()
	failed   bool
}

var errBenchFatal = errors.New("bench: a Redis helper failed")

func (b *benchTB) Helper()                      {}
func (b *benchTB) Cleanup(f func())             { b.cleanups = append(b.cleanups, f) }
func (b *benchTB) Failed() bool                 { return b.failed }
func (b *benchTB) Logf(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }
func (b *benchTB) Fatal(a ...any)               { b.fail(fmt.Sprint(a...)) }
func (b *benchTB) Fatalf(f string, a ...any)    { b.fail(fmt.Sprintf(f, a...)) }
func (b *benchTB) Skip(a ...any)                { b.fail(fmt.Sprint(a...)) }
func (b *benchTB) fail(msg string) {
	b.failed = true
	fmt.Fprintln(os.Stderr, msg)
	panic(errBenchFatal)
}
func (b *benchTB) close() {
	for i := len(b.cleanups) - 1; i >= 0; i-- {
		b.cleanups[i]()
	}
}

func clusterBench(o options) (err error) {
	tb := &benchTB{}
	defer tb.close()
	defer func() {
		if r := recover(); r != nil {
			if r != errBenchFatal {
				panic(r)
			}
			err = errBenchFatal
		}
	}()
	ctx := context.Background()
	sites, stopSites, err := serveSites([]string{"127.0.0.1"})
	if err != nil {
		return err
	}
	defer stopSites()
	o.allow = "127.0.0.1/32"
	urls := make([]string, o.cluster.pages)
	for i := range urls {
		urls[i] = fmt.Sprintf("%s/short?i=%d", sites[0], i)
	}
	opts := map[string]any{"outputs": []string{"text"}, "viewport": map[string]any{"width": 320, "height": 240}}

	single := testenv.StartRedisServer(tb)
	cluster := testenv.StartCluster(tb)
	stacks := map[string]*stack{}
	for _, d := range []struct{ name, url, shards string }{
		{"single", single.URL(), "1"},
		{"cluster", cluster.URL(), strconv.Itoa(o.cluster.shards)},
	} {
		so := o
		so.env = append(append([]string{}, o.env...), "SNAPQ_REDIS_URL="+d.url, "SNAPQ_QUEUE_SHARDS="+d.shards)
		st, err := startStack(ctx, so)
		if err != nil {
			return fmt.Errorf("%s stack: %w", d.name, err)
		}
		defer st.close()
		st.options = opts
		if _, err := st.runBatch(urls[:min(8, len(urls))]); err != nil {
			return fmt.Errorf("%s warm-up: %w", d.name, err)
		}
		stacks[d.name] = st
	}
	fmt.Printf("bench: cluster: %d tiny pages a batch, concurrency %d, %d rounds; cluster of 3 masters, %d shards\n",
		len(urls), o.concurrency, o.rounds, o.cluster.shards)
	total := map[string]time.Duration{}
	for r := 1; r <= o.rounds; r++ {
		order := []string{"single", "cluster"}
		if r%2 == 0 {
			order = []string{"cluster", "single"}
		}
		got := map[string]time.Duration{}
		for _, name := range order {
			d, err := stacks[name].runBatch(urls)
			if err != nil {
				return fmt.Errorf("%s round %d: %w", name, r, err)
			}
			got[name] = d
			total[name] += d
		}
		fmt.Printf("bench: cluster: round %d: single %.2f pages/s, cluster %.2f pages/s\n", r,
			pps(len(urls), got["single"]), pps(len(urls), got["cluster"]))
	}
	n := len(urls) * o.rounds
	fmt.Printf("bench: cluster: single redis %.2f pages/s, sharded cluster %.2f pages/s (%d pages each)\n",
		pps(n, total["single"]), pps(n, total["cluster"]), n)
	fmt.Printf("bench: cluster: sharded cluster / single redis = %.2f\n", total["single"].Seconds()/total["cluster"].Seconds())
	return nil
}
