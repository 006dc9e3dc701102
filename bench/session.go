package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-rod/rod/lib/proto"

	"github.com/snapq/snapq/client"
)

// sessionBench (-session) measures one session command's round trip: the median time of
// `click REF` through the API (client → api → Redis → worker → Chromium → reply) on a
// local page, beside a bare go-rod click (Element.Click) on the same page in a warm
// browser, both in one run. It prints "bench: session click median … ms, bare go-rod …
// ms, ratio R".
const sessionClicks = 40

const clickPage = `<!doctype html><title>clicks</title>
<button id="b" onclick="this.textContent = String(Number(this.textContent) + 1)">0</button>`

func sessionBench(o options) error {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, clickPage)
	})}
	go srv.Serve(ln) //nolint:errcheck
	defer srv.Close()
	page := "http://" + ln.Addr().String() + "/"
	o.allow = "127.0.0.2/32"
	n := strconv.Itoa(max(1, o.sessionTabs))
	o.env = append(o.env, "SNAPQ_SESSION_TABS="+n, "SNAPQ_SESSIONS_PER_KEY="+n)
	st, err := startStack(ctx, o)
	if err != nil {
		return err
	}
	defer st.close()
	api, err := apiClicks(ctx, st.api, page)
	if err != nil {
		return fmt.Errorf("session clicks: %w", err)
	}
	bare, err := bareClicks(ctx, o.chrome, page)
	if err != nil {
		return fmt.Errorf("bare go-rod clicks: %w", err)
	}
	ma, mb := median(api), median(bare)
	fmt.Printf("bench: session click median %.1f ms (p90 %.1f), bare go-rod click median %.1f ms (p90 %.1f), ratio %.1f (%d clicks each)\n",
		ms(ma), ms(pct(api, 90)), ms(mb), ms(pct(bare, 90)), float64(ma)/float64(mb), sessionClicks)
	return batchBeside(ctx, o, st, page)
}

// apiClicks opens a session on page and times sessionClicks clicks by ref.
func apiClicks(ctx context.Context, base, page string) ([]time.Duration, error) {
	c, err := client.New(client.Config{BaseURL: base})
	if err != nil {
		return nil, err
	}
	var sess *client.Session
	for deadline := time.Now().Add(3 * time.Minute); ; {
		sess, err = c.CreateSession(ctx, client.SessionOptions{})
		var ae *client.Error
		if err == nil || !errors.As(err, &ae) || ae.Code != "no_session_worker" || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	defer c.CloseSession(context.WithoutCancel(ctx), sess.ID) //nolint:errcheck
	if r, err := c.Exec(ctx, sess.ID, "open", page); err != nil || !r.OK {
		return nil, fmt.Errorf("open: %v %+v", err, r)
	}
	if r, err := c.Exec(ctx, sess.ID, "snapshot"); err != nil || !r.OK {
		return nil, fmt.Errorf("snapshot: %v %+v", err, r)
	}
	var out []time.Duration
	for i := range sessionClicks + 5 {
		start := time.Now()
		r, err := c.Exec(ctx, sess.ID, "click", "e1")
		if err != nil || !r.OK {
			return nil, fmt.Errorf("click: %v %+v", err, r)
		}
		if i >= 5 { // the first ones warm up
			out = append(out, time.Since(start))
		}
	}
	return out, nil
}

// bareClicks times sessionClicks go-rod clicks on page in a warm browser.
func bareClicks(ctx context.Context, chrome, page string) ([]time.Duration, error) {
	f, err := newFloor(ctx, chrome, 1)
	if err != nil {
		return nil, err
	}
	defer f.close()
	p := f.pages[0]
	if err := p.Navigate(page); err != nil {
		return nil, err
	}
	if err := p.WaitLoad(); err != nil {
		return nil, err
	}
	el, err := p.Element("#b")
	if err != nil {
		return nil, err
	}
	var out []time.Duration
	for i := range sessionClicks + 5 {
		start := time.Now()
		if err := el.Click(proto.InputMouseButtonLeft, 1); err != nil {
			return nil, err
		}
		if i >= 5 {
			out = append(out, time.Since(start))
		}
	}
	return out, nil
}

func median(d []time.Duration) time.Duration { return pct(d, 50) }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// batchBeside times batches of o.batchPages fixture pages with no session open and with
// the worker's every session tab held by a session that clicks (an agent's pace: a command,
// then 200 ms), o.rounds rounds interleaved, in this one stack. It prints both pages/s and
// their ratio: sessions hold a Chromium of their own, so the ratio shows the CPU they take.
func batchBeside(ctx context.Context, o options, st *stack, page string) error {
	sites, stop, err := serveSites([]string{"127.0.0.2"})
	if err != nil {
		return err
	}
	defer stop()
	corpus := buildCorpus(sites, max(1, o.batchPages))
	if _, err := st.runBatch(corpus[:min(4, len(corpus))]); err != nil {
		return fmt.Errorf("batch warm-up: %w", err)
	}
	var without, with time.Duration
	for r := 1; r <= o.rounds; r++ {
		plain := func() error {
			d, err := st.runBatch(corpus)
			without += d
			return err
		}
		busy := func() error {
			d, err := batchWithSessions(ctx, st, corpus, page, max(1, o.sessionTabs))
			with += d
			return err
		}
		first, second := plain, busy
		if r%2 == 0 {
			first, second = busy, plain
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
		fmt.Printf("bench: round %d: batch without sessions %.1fs total, with sessions %.1fs total\n", r, without.Seconds(), with.Seconds())
	}
	n := len(corpus) * o.rounds
	fmt.Printf("bench: batch without sessions %.2f pages/s, with %d sessions open and clicking %.2f pages/s, ratio with/without %.2f (%d pages each)\n",
		pps(n, without), o.sessionTabs, pps(n, with), without.Seconds()/with.Seconds(), n)
	return nil
}

// batchWithSessions opens n sessions on page, keeps each clicking while one batch of corpus
// runs, closes them, and returns the batch's wall time.
func batchWithSessions(ctx context.Context, st *stack, corpus []string, page string, n int) (time.Duration, error) {
	c, err := client.New(client.Config{BaseURL: st.api})
	if err != nil {
		return 0, err
	}
	var ids []string
	defer func() {
		for _, id := range ids {
			_, _ = c.CloseSession(context.WithoutCancel(ctx), id)
		}
	}()
	for range n {
		s, err := c.CreateSession(ctx, client.SessionOptions{})
		if err != nil {
			return 0, fmt.Errorf("open session %d of %d: %w", len(ids)+1, n, err)
		}
		ids = append(ids, s.ID)
		if r, err := c.Exec(ctx, s.ID, "open", page); err != nil || !r.OK {
			return 0, fmt.Errorf("open: %v %+v", err, r)
		}
		if r, err := c.Exec(ctx, s.ID, "snapshot"); err != nil || !r.OK {
			return 0, fmt.Errorf("snapshot: %v %+v", err, r)
		}
	}
	cctx, stopClicks := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cctx.Err() == nil {
				_, _ = c.Exec(cctx, id, "click", "e1")
				select {
				case <-cctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
			}
		}()
	}
	d, err := st.runBatch(corpus)
	stopClicks()
	wg.Wait()
	return d, err
}
