package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// targets is what the API clients poll: batch and job ids, growing as the
// soak submits batches.
type targets struct {
	mu      sync.RWMutex
	batches []string
	jobs    []string
}

func (t *targets) add(batch string, jobs []string) {
	t.mu.Lock()
	t.batches = append(t.batches, batch)
	t.jobs = append(t.jobs, jobs...)
	t.mu.Unlock()
}

// pick returns a path to GET: a batch or a job, half and half.
func (t *targets) pick(r *rand.Rand) string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if len(t.batches) == 0 {
		return ""
	}
	if r.IntN(2) == 0 {
		return "/v1/batches/" + t.batches[r.IntN(len(t.batches))]
	}
	return "/v1/jobs/" + t.jobs[r.IntN(len(t.jobs))]
}

// pollStats is what the API clients saw.
type pollStats struct {
	latencies []time.Duration
	errors    int
	examples  []string // the first few distinct errors
}

// poll runs n clients until ctx ends, each GETting a batch or a job every
// interval (±50% jitter, so they do not march in step). An error is a
// transport error, a timeout (30 s) or a status other than 200.
func poll(ctx context.Context, api string, t *targets, n int, interval time.Duration) pollStats {
	tr := &http.Transport{MaxIdleConnsPerHost: n, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var mu sync.Mutex
	var all pollStats
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
			var mine pollStats
			for {
				wait := interval/2 + time.Duration(r.Int64N(int64(interval)))
				select {
				case <-ctx.Done():
					mu.Lock()
					all.latencies = append(all.latencies, mine.latencies...)
					all.errors += mine.errors
					for _, e := range mine.examples {
						if len(all.examples) < 5 && !slices.Contains(all.examples, e) {
							all.examples = append(all.examples, e)
						}
					}
					mu.Unlock()
					return
				case <-time.After(wait):
				}
				path := t.pick(r)
				if path == "" {
					continue
				}
				start := time.Now()
				err := get(ctx, client, api+path)
				if ctx.Err() != nil {
					continue // the soak is over; this request was cut short, not failed
				}
				mine.latencies = append(mine.latencies, time.Since(start))
				if err != nil {
					mine.errors++
					if len(mine.examples) < 5 {
						mine.examples = append(mine.examples, err.Error())
					}
				}
			}
		})
	}
	wg.Wait()
	return all
}

func get(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", req.URL.Path, resp.Status)
	}
	return err
}

// slowHeader opens a connection to the api and sends a request header one
// byte a second, as a slowloris client does. It returns how long the server
// let it hang on, or an error when it was still connected after limit.
func slowHeader(addr string, limit time.Duration) (time.Duration, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	start := time.Now()
	closed := make(chan struct{})
	go func() {
		// The server closes the connection (it may first answer 408); either
		// way Read ends.
		_, _ = io.Copy(io.Discard, conn)
		close(closed)
	}()
	header := []byte("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for i := 0; ; i++ {
		b := byte('a')
		if i < len(header) {
			b = header[i]
		}
		if _, err := conn.Write([]byte{b}); err != nil {
			return time.Since(start), nil // reset by the server
		}
		select {
		case <-closed:
			return time.Since(start), nil
		case <-tick.C:
		}
		if time.Since(start) > limit {
			return time.Since(start), fmt.Errorf("still connected after %s", limit)
		}
	}
}

// percentile returns the q-quantile (0..1) of sorted latencies.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return sorted[i]
}
