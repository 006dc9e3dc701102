package main

// The live events bench (-sse): two api replicas on one Redis and Postgres,
// -sse-clients clients following one batch of tiny pages over Server-Sent
// Events, half on each replica. The clients connect (and get their snapshot)
// before the worker starts, so every job transition reaches every client
// live. It prints the events each replica delivered per second and the
// latency from a job's commit (the event's "at", stamped by the publisher
// just after the commit) to its receipt, p50 and p99, over every client.

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/snapq/snapq/internal/testenv"
)

type sseOptions struct {
	on      bool
	clients int
	pages   int
}

func (s *sseOptions) flags() {
	flag.BoolVar(&s.on, "sse", false, "measure live events (SSE) fan-out instead of the bench")
	flag.IntVar(&s.clients, "sse-clients", 200, "clients following the batch, half on each api replica")
	flag.IntVar(&s.pages, "sse-pages", 100, "pages in the followed batch")
}

// sseClient is one follower's tally.
type sseClient struct {
	replica   int
	events    int
	latencies []time.Duration // job events: receipt - at
	first     time.Time       // first event after the snapshot
	last      time.Time
	done      bool
	err       error
}

func sseBench(o options) error {
	ctx := context.Background()
	sites, stopSites, err := serveSites([]string{"127.0.0.1"})
	if err != nil {
		return err
	}
	defer stopSites()
	o.allow = "127.0.0.1/32"
	o.noWorker = true
	st, err := startStack(ctx, o)
	if err != nil {
		return err
	}
	defer st.close()
	port, err := testenv.FreePort()
	if err != nil {
		return err
	}
	replicaB := &testenv.Procs{BinDir: st.procs.BinDir, LogDir: st.procs.LogDir,
		Env: append(append([]string(nil), st.procs.Env...), "SNAPQ_HTTP_ADDR=127.0.0.1:"+port)}
	if err := replicaB.StartAs("api-b", "api"); err != nil {
		return err
	}
	defer replicaB.StopAll()
	apis := []string{st.api, "http://127.0.0.1:" + port}
	if err := testenv.WaitReady(apis[1], 30*time.Second); err != nil {
		return err
	}

	urls := make([]string, o.sse.pages)
	for i := range urls {
		urls[i] = fmt.Sprintf("%s/short?i=%d", sites[0], i)
	}
	body, _ := json.Marshal(map[string]any{"urls": urls,
		"options": map[string]any{"outputs": []string{"text"}, "viewport": map[string]any{"width": 320, "height": 240}}})
	resp, err := http.Post(apis[1]+"/v1/batches", "application/json", strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	var b struct {
		ID string `json:"id"`
	}
	err = json.NewDecoder(resp.Body).Decode(&b)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("submit: status %d: %v", resp.StatusCode, err)
	}

	// Every client connected and holding its snapshot before the worker starts.
	clients := make([]*sseClient, o.sse.clients)
	var ready, finished sync.WaitGroup
	tr := &http.Transport{MaxIdleConnsPerHost: o.sse.clients, MaxConnsPerHost: 0}
	hc := &http.Client{Transport: tr}
	for i := range clients {
		c := &sseClient{replica: i % 2}
		clients[i] = c
		ready.Add(1)
		finished.Add(1)
		go func() {
			defer finished.Done()
			c.follow(hc, apis[c.replica]+"/v1/batches/"+b.ID+"/events", ready.Done)
		}()
	}
	ready.Wait()
	fmt.Printf("bench: sse: %d clients (%d per replica, 2 api replicas) on one batch of %d tiny pages, worker concurrency %d\n",
		len(clients), len(clients)/2, len(urls), o.concurrency)
	start := time.Now()
	if err := st.procs.Start("worker"); err != nil {
		return err
	}
	waited := make(chan struct{})
	go func() { finished.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(10 * time.Minute):
		return fmt.Errorf("clients still waiting for done after 10 minutes")
	}
	fmt.Printf("bench: sse: batch done %.1fs after the worker started\n", time.Since(start).Seconds())

	var all []time.Duration
	for r := range 2 {
		events, done := 0, 0
		var first, last time.Time
		var lat []time.Duration
		for _, c := range clients {
			if c.replica != r {
				continue
			}
			if c.err != nil {
				return fmt.Errorf("client on replica %d: %w", r, c.err)
			}
			events += c.events
			if c.done {
				done++
			}
			if first.IsZero() || (!c.first.IsZero() && c.first.Before(first)) {
				first = c.first
			}
			if c.last.After(last) {
				last = c.last
			}
			lat = append(lat, c.latencies...)
		}
		all = append(all, lat...)
		secs := last.Sub(first).Seconds()
		fmt.Printf("bench: sse: replica %c: %d events to %d clients in %.1fs = %.0f events/s delivered; %d/%d clients got done; commit->receipt p50 %s p99 %s\n",
			'A'+r, events, len(clients)/2, secs, float64(events)/secs, done, len(clients)/2, pct(lat, 50), pct(lat, 99))
	}
	fmt.Printf("bench: sse: job events %d received; commit->receipt latency p50 = %s, p99 = %s\n", len(all), pct(all, 50), pct(all, 99))
	return nil
}

// follow reads the stream until done, calling connected after the snapshot.
func (c *sseClient) follow(hc *http.Client, url string, connected func()) {
	once := sync.OnceFunc(connected)
	defer once()
	resp, err := hc.Get(url)
	if err != nil {
		c.err = err
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		c.err = fmt.Errorf("status %d", resp.StatusCode)
		return
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var typ string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			typ = line[7:]
		case strings.HasPrefix(line, "data: "):
			now := time.Now()
			switch typ {
			case "snapshot":
				once()
				continue
			case "done":
				c.done = true
				return
			}
			c.events++
			if c.first.IsZero() {
				c.first = now
			}
			c.last = now
			if typ == "job" {
				var d struct {
					At time.Time `json:"at"`
				}
				if json.Unmarshal([]byte(line[6:]), &d) == nil {
					c.latencies = append(c.latencies, now.Sub(d.At))
				}
			}
		}
	}
	c.err = fmt.Errorf("stream ended without done: %v", sc.Err())
}

// pct is the p-th percentile of ds, rounded to 0.1 ms.
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)].Round(100 * time.Microsecond)
}
