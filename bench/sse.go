package main

// The live events bench (-sse): two api replicas on one Redis and Postgres,
// -sse-clients clients following one batch of tiny pages over Server-Sent
// Events, half on each replica. The clients connect (and get their snapshot)
// before the worker starts, so every job transition reaches every client
// live. It prints the events each replica delivered per second and the
// latency from a job's commit (the event's "at", stamped by the publisher
// just after the commit) to its receipt, p50 and p99, over every client.
// First, before the worker starts, -sse-burst synthetic job events are
// published to the same stream as fast as Redis takes them: the rate the
// replicas deliver them at is their fan-out capacity, not the batch's pace.

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

	"github.com/redis/go-redis/v9"

	"github.com/snapq/snapq/events"
	"github.com/snapq/snapq/internal/testenv"
	"github.com/snapq/snapq/queue"
)

type sseOptions struct {
	on      bool
	clients int
	pages   int
	burst   int
}

func (s *sseOptions) flags() {
	flag.BoolVar(&s.on, "sse", false, "measure live events (SSE) fan-out instead of the bench")
	flag.IntVar(&s.clients, "sse-clients", 200, "clients following the batch, half on each api replica")
	flag.IntVar(&s.pages, "sse-pages", 100, "pages in the followed batch")
	flag.IntVar(&s.burst, "sse-burst", 2000, "synthetic job events published as fast as possible before the worker starts (capacity); 0: none")
}

// sseClient is one follower's tally.
type sseClient struct {
	replica int
	// the burst of synthetic events (job ids "burst-N"), counted apart
	burst                 int
	burstLat              []time.Duration
	burstFirst, burstLast time.Time
	burstDone             chan struct{}
	burstWant             int
	burstClosed           bool
	events                int
	latencies             []time.Duration // job events: receipt - at
	first                 time.Time       // first event after the snapshot
	last                  time.Time
	done                  bool
	err                   error
	reconnects            int
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
		c := &sseClient{replica: i % 2, burstWant: o.sse.burst, burstDone: make(chan struct{})}
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
	if o.sse.burst > 0 {
		if err := sseBurst(ctx, st, b.ID, clients, o.sse.burst); err != nil {
			return err
		}
	}
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
		events, done, reconnects := 0, 0, 0
		var first, last time.Time
		var lat []time.Duration
		for _, c := range clients {
			if c.replica != r {
				continue
			}
			if !c.done {
				return fmt.Errorf("client on replica %d: %w", r, c.err)
			}
			events += c.events
			reconnects += c.reconnects
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
		fmt.Printf("bench: sse: replica %c: %d events to %d clients in %.1fs = %.0f events/s delivered; %d/%d clients got done (%d reconnects); commit->receipt p50 %s p99 %s\n",
			'A'+r, events, len(clients)/2, secs, float64(events)/secs, done, len(clients)/2, reconnects, pct(lat, 50), pct(lat, 99))
	}
	fmt.Printf("bench: sse: job events %d received; commit->receipt latency p50 = %s, p99 = %s\n", len(all), pct(all, 50), pct(all, 99))
	return nil
}

// follow reads the stream until done, calling connected after the snapshot.
// A stream that ends early (a client that fell too far behind is dropped by
// the server) is resumed with Last-Event-ID, as EventSource does.
func (c *sseClient) follow(hc *http.Client, url string, connected func()) {
	once := sync.OnceFunc(connected)
	defer once()
	last := ""
	for attempt := 0; attempt < 20; attempt++ {
		if attempt > 0 {
			c.reconnects++
		}
		done, err := c.read(hc, url, &last, once)
		if done {
			return
		}
		c.err = err
	}
}

// read reads one connection of the stream; it reports whether done came.
func (c *sseClient) read(hc *http.Client, url string, last *string, connected func()) (bool, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return false, err
	}
	if *last != "" {
		req.Header.Set("Last-Event-ID", *last)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var typ string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			*last = line[4:]
		case strings.HasPrefix(line, "event: "):
			typ = line[7:]
		case strings.HasPrefix(line, "data: "):
			now := time.Now()
			switch typ {
			case "snapshot":
				connected()
				continue
			case "done":
				c.done = true
				return true, nil
			}
			if typ == "job" && strings.Contains(line, `"job_id":"burst-`) {
				c.burstEvent(now, line[6:])
				continue
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
	return false, fmt.Errorf("stream ended without done: %v", sc.Err())
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

func (c *sseClient) burstEvent(now time.Time, data string) {
	var d struct {
		At time.Time `json:"at"`
	}
	if json.Unmarshal([]byte(data), &d) == nil {
		c.burstLat = append(c.burstLat, now.Sub(d.At))
	}
	if c.burstFirst.IsZero() {
		c.burstFirst = now
	}
	c.burstLast = now
	c.burst++
	if c.burst == c.burstWant && !c.burstClosed {
		c.burstClosed = true
		close(c.burstDone)
	}
}

// sseBurst publishes n synthetic job events to the batch's stream as fast as
// Redis takes them (20 per round trip) and waits until every client got
// them all: the replicas' fan-out capacity.
func sseBurst(ctx context.Context, st *stack, batchID string, clients []*sseClient, n int) error {
	var redisURL string
	for _, kv := range st.procs.Env {
		if v, ok := strings.CutPrefix(kv, "SNAPQ_REDIS_URL="); ok {
			redisURL = v // the last one wins, as for the processes
		}
	}
	opt, err := queue.ParseRedisURL(redisURL)
	if err != nil {
		return err
	}
	rdb, ok := opt.MakeRedisClient().(redis.UniversalClient)
	if !ok {
		return fmt.Errorf("unexpected redis client type")
	}
	defer rdb.Close()
	pub := &events.Publisher{Redis: rdb}
	stream := events.BatchStream(batchID)
	start := time.Now()
	for i := 0; i < n; i += 20 {
		var evs []events.Event
		for j := i; j < min(i+20, n); j++ {
			evs = append(evs, events.Event{Type: events.TypeJob, Data: events.Job{BatchID: batchID,
				JobID: fmt.Sprintf("burst-%d", j), Status: "running", Attempt: 1, At: time.Now()}})
		}
		pub.Publish(ctx, stream, false, evs...)
	}
	published := time.Since(start)
	if pub.Failures() > 0 {
		return fmt.Errorf("%d burst publishes failed", pub.Failures())
	}
	timeout := time.After(5 * time.Minute)
	for _, c := range clients {
		select {
		case <-c.burstDone:
		case <-timeout:
			return fmt.Errorf("a client got %d of the %d burst events", c.burst, n)
		}
	}
	fmt.Printf("bench: sse: burst: %d events published in %.2fs (%.0f/s)\n", n, published.Seconds(), float64(n)/published.Seconds())
	var all []time.Duration
	for r := range 2 {
		events := 0
		var first, last time.Time
		var lat []time.Duration
		for _, c := range clients {
			if c.replica != r {
				continue
			}
			events += c.burst
			if first.IsZero() || c.burstFirst.Before(first) {
				first = c.burstFirst
			}
			if c.burstLast.After(last) {
				last = c.burstLast
			}
			lat = append(lat, c.burstLat...)
		}
		all = append(all, lat...)
		secs := last.Sub(first).Seconds()
		fmt.Printf("bench: sse: burst: replica %c delivered %d events to %d clients in %.2fs = %.0f events/s; publish->receipt p50 %s p99 %s\n",
			'A'+r, events, len(clients)/2, secs, float64(events)/secs, pct(lat, 50), pct(lat, 99))
	}
	fmt.Printf("bench: sse: burst: publish->receipt latency p50 = %s, p99 = %s (%d receipts)\n", pct(all, 50), pct(all, 99), len(all))
	return nil
}
