package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/snapq/snapq/jobs"
)

// Many workers completing crawl pages at once, all linking to the same pages, add each
// page once and stop at max_pages; the batch is not complete while pages are unfinished,
// and children sit one level below their parent.
func TestCrawlFrontierConcurrent(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	svc := &jobs.Service{Repo: st, Queue: nopQueue{}}
	b, js, _, err := svc.Submit(ctx, jobs.Submission{Body: []byte(`{"crawl": {"url": "https://crawl.example/", "max_pages": 25, "max_depth": 3}}`)})
	if err != nil {
		t.Fatal(err)
	}
	links := func(prefix string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("https://crawl.example/%s%d", prefix, i), fmt.Sprintf("https://CRAWL.example:443/%s%d#x", prefix, i))
		}
		return out
	}
	complete := func(id string, l []string) int {
		t.Helper()
		j, _, err := st.StartJob(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		settled, added, err := st.CompleteCrawlJob(ctx, j, &jobs.Result{}, nil, l, 0)
		if err != nil || !settled.Current || !settled.Known {
			t.Fatalf("complete %s: %+v %v", id, settled, err)
		}
		return added
	}
	if n := complete(js[0].ID, links("a", 8)); n != 8 {
		t.Fatalf("the start page added %d, want 8", n)
	}
	children, _, err := st.ListJobs(ctx, b.ID, jobs.StatusQueued, 100, "")
	if err != nil || len(children) != 8 {
		t.Fatalf("%d queued jobs (%v)", len(children), err)
	}
	if c := children[0].Crawl; c == nil || c.Depth != 1 || c.ParentID != js[0].ID || c.FoundOn != "https://crawl.example/" {
		t.Errorf("child crawl position %+v", c)
	}
	// 8 workers complete the 8 children at once; each links to the same 30 pages.
	var wg sync.WaitGroup
	total := make(chan int, len(children))
	for _, c := range children {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j, _, err := st.StartJob(ctx, c.ID)
			if err != nil {
				t.Error(err)
				return
			}
			_, added, err := st.CompleteCrawlJob(ctx, j, &jobs.Result{}, nil, append(links("b", 30), "https://crawl.example/a1"), 0)
			if err != nil {
				t.Error(err)
			}
			total <- added
		}()
	}
	wg.Wait()
	close(total)
	sum := 0
	for n := range total {
		sum += n
	}
	got, err := st.GetBatch(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if sum != 16 || got.Total != 25 || got.Counts.Queued != 16 || got.Status() == jobs.BatchCompleted {
		t.Errorf("added %d, batch total %d counts %+v status %s; want 16 added, 25 in all, 16 queued", sum, got.Total, got.Counts, got.Status())
	}
	// The 14 b pages past max_pages, linked from 8 pages, are skipped once each.
	if got.CrawlSkipped != 14 || got.View().Crawl == nil || got.View().Crawl.Skipped != 14 {
		t.Errorf("skipped %d, want 14", got.CrawlSkipped)
	}
	all, _, _ := st.ListJobs(ctx, b.ID, "", 100, "")
	seen := map[string]bool{}
	for _, j := range all {
		if seen[j.URL] {
			t.Errorf("%s twice", j.URL)
		}
		seen[j.URL] = true
	}
	// At max_pages, a page adds nothing; the last page finished completes the batch.
	queued, _, _ := st.ListJobs(ctx, b.ID, jobs.StatusQueued, 100, "")
	for _, j := range queued {
		if n := complete(j.ID, links("c", 5)); n != 0 {
			t.Errorf("a page past max_pages added %d", n)
		}
	}
	if got, _ := st.GetBatch(ctx, b.ID); got.Status() != jobs.BatchCompleted || got.FinishedAt == nil || got.Total != 25 || got.CrawlSkipped != 14+5 {
		t.Errorf("batch %s total %d finished %v skipped %d (want 19: the c pages once each)", got.Status(), got.Total, got.FinishedAt, got.CrawlSkipped)
	}
}

// A canceled crawl adds nothing more; a page at max_depth adds nothing.
func TestCrawlStopsWhenCanceledOrDeep(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	svc := &jobs.Service{Repo: st, Queue: nopQueue{}}
	_, js, _, err := svc.Submit(ctx, jobs.Submission{Body: []byte(`{"crawl": {"url": "https://deep.example/", "max_depth": 0}}`)})
	if err != nil {
		t.Fatal(err)
	}
	j, _, _ := st.StartJob(ctx, js[0].ID)
	// Its only page finishes the batch: the settlement says so (the hooks need not look).
	if settled, added, err := st.CompleteCrawlJob(ctx, j, &jobs.Result{}, nil, []string{"https://deep.example/a"}, 0); err != nil ||
		added != 0 || !settled.Current || !settled.Known || !settled.BatchFinished {
		t.Errorf("max_depth 0: added %d, settled %+v (%v)", added, settled, err)
	}

	b, js, _, err := svc.Submit(ctx, jobs.Submission{Body: []byte(`{"crawl": {"url": "https://cancel.example/"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	j, _, _ = st.StartJob(ctx, js[0].ID)
	settled, added, err := st.CompleteCrawlJob(ctx, j, &jobs.Result{}, nil, []string{"https://cancel.example/a", "https://cancel.example/b"}, 0)
	if err != nil || !settled.Current || added != 2 {
		t.Fatalf("added %d (%+v %v)", added, settled, err)
	}
	kids, _, _ := st.ListJobs(ctx, b.ID, jobs.StatusQueued, 10, "")
	kid, _, _ := st.StartJob(ctx, kids[0].ID)
	if _, err := st.CancelBatch(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	if _, added, err := st.CompleteCrawlJob(ctx, kid, &jobs.Result{}, nil, []string{"https://cancel.example/c"}, 0); err != nil || added != 0 {
		t.Errorf("canceled batch: added %d (%v)", added, err)
	}
}

// Pages a crawl adds count against the owner's in-flight cap: past it they are not added.
func TestCrawlCountsAgainstInFlightCap(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	owner := newKey(t, st)
	svc := &jobs.Service{Repo: st, Queue: nopQueue{}, MaxInFlight: 5}
	if _, _, _, err := svc.Submit(ctx, jobs.Submission{Body: urlsBody(2), Owner: owner}); err != nil {
		t.Fatal(err)
	}
	b, js, _, err := svc.Submit(ctx, jobs.Submission{Body: []byte(`{"crawl": {"url": "https://cap.example/"}}`), Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	j, _, _ := st.StartJob(ctx, js[0].ID)
	var links []string
	for i := range 10 {
		links = append(links, fmt.Sprintf("https://cap.example/%d", i))
	}
	// 2 unfinished jobs of the owner's other batch, the start page done: room for 3.
	if _, added, err := st.CompleteCrawlJob(ctx, j, &jobs.Result{}, nil, links, 5); err != nil || added != 3 {
		t.Errorf("added %d (%v), want 3 under the cap of 5", added, err)
	}
	if got, _ := st.GetBatch(ctx, b.ID); got.Total != 4 {
		t.Errorf("batch total %d, want 4", got.Total)
	}
}
