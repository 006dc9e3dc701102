package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/snapq/snapq/capture"
)

// A crawl batch starts with one job, its start page; each page it captures hands the links
// it found (the links output) to the store, which adds the unseen ones, within the crawl's
// bounds, to the same batch in the transaction that completes the page's job. The batch is
// therefore never complete while a page that may still add jobs is unfinished.

// Crawl bounds.
const (
	DefaultCrawlDepth = 2
	MaxCrawlDepth     = 10
	DefaultCrawlPages = 100 // capped by the batch size limit
	// MaxCrawlLinks bounds the links one page may hand to the frontier.
	MaxCrawlLinks = 5000
	// MaxCrawlSkipped bounds the skipped pages a crawl batch records (crawl.skipped).
	MaxCrawlSkipped = 10000
)

// CrawlInput is the "crawl" field of POST /v1/batches.
type CrawlInput struct {
	URL        string   `json:"url"`
	MaxDepth   *float64 `json:"max_depth"`
	MaxPages   *float64 `json:"max_pages"`
	Include    []string `json:"include"`
	Exclude    []string `json:"exclude"`
	SameOrigin *bool    `json:"same_origin"`
}

// Crawl is a crawl batch's validated settings, stored with the batch.
type Crawl struct {
	URL        string   `json:"url"` // the start page, normalised
	MaxDepth   int      `json:"max_depth"`
	MaxPages   int      `json:"max_pages"`
	Include    []string `json:"include"`
	Exclude    []string `json:"exclude"`
	SameOrigin bool     `json:"same_origin"`
}

// CrawlPos is where a job of a crawl batch sits in the crawl; nil for other jobs.
type CrawlPos struct {
	Depth    int    // 0 for the start page
	ParentID string // the job whose page linked here ("" for the start page)
	FoundOn  string // that page's URL
	// URLKey is the job's normalised URL identity (dedupeKey): a batch holds each once.
	URLKey string
	// Batch is the crawl batch's settings, read with the job when it starts
	// (JobStore.StartJob), so the page's completion need not read them
	// again; nil when the batch is no crawl or they were not read.
	Batch *Crawl `json:"-"`
}

// Pages is the Crawl.Frontier of the links the page at p found: none
// without the batch's settings.
func (p *CrawlPos) Pages(links []string) []CrawlPage {
	if p == nil || p.Batch == nil {
		return nil
	}
	return p.Batch.Frontier(p.Depth, links)
}

// CrawlPage is one page the frontier would add.
type CrawlPage struct {
	URL string // normalised
	Key string // dedupeKey(URL)
}

// crawlGiven reports whether the body asks for a crawl.
func (r *BatchRequest) crawlGiven() bool { return r.Crawl != nil }

// parseCrawl validates a crawl body; maxTargets bounds max_pages.
func parseCrawl(req *BatchRequest, maxTargets int) (*Crawl, error) {
	in := req.Crawl
	var errs FieldErrors
	if len(req.Targets)+len(req.URLs) > 0 || req.sitemapGiven() {
		errs.Add("invalid_field", "crawl", "give either crawl, sitemap or targets/urls, not several")
	}
	c := &Crawl{MaxDepth: DefaultCrawlDepth, MaxPages: min(DefaultCrawlPages, maxTargets), SameOrigin: true,
		Include: in.Include, Exclude: in.Exclude}
	if in.URL == "" {
		errs.Add("required", "crawl.url", "the start page of the crawl")
	} else if u, code, err := CheckBrowserURL(in.URL); err != nil {
		errs.Add(code, "crawl.url", err.Error())
	} else {
		c.URL = u
	}
	if in.MaxDepth != nil {
		if d := *in.MaxDepth; d != math.Trunc(d) || d < 0 || d > MaxCrawlDepth {
			errs.Add("invalid_option", "crawl.max_depth", fmt.Sprintf("must be a whole number from 0 to %d (0: the start page only)", MaxCrawlDepth))
		} else {
			c.MaxDepth = int(d)
		}
	}
	if in.MaxPages != nil {
		if p := *in.MaxPages; p != math.Trunc(p) || p < 1 || p > float64(maxTargets) {
			errs.Add("invalid_option", "crawl.max_pages", fmt.Sprintf("must be a whole number from 1 to %d (the batch size limit)", maxTargets))
		} else {
			c.MaxPages = int(p)
		}
	}
	if in.SameOrigin != nil {
		c.SameOrigin = *in.SameOrigin
	}
	compilePatterns(in.Include, "crawl.include", &errs)
	compilePatterns(in.Exclude, "crawl.exclude", &errs)
	if err := ValidationErrors(errs); err != nil {
		return nil, err
	}
	return c, nil
}

// expandCrawl turns a decoded crawl body (DecodeStrict's errs and ok) into the same
// body with "urls": [start] and returns the crawl's settings; a body without "crawl" is
// left as it is, with a nil Crawl.
func (s *Service) expandCrawl(req *BatchRequest, errs FieldErrors, ok bool) (*Crawl, error) {
	if !ok || !req.crawlGiven() {
		return nil, nil
	}
	if len(errs) > 0 { // unknown fields, which dropping "crawl" would hide
		return nil, ValidationErrors(errs)
	}
	maxTargets := s.MaxTargets
	if maxTargets <= 0 {
		maxTargets = MaxTargets
	}
	c, err := parseCrawl(req, maxTargets)
	if err != nil {
		return nil, err
	}
	req.Crawl, req.URLs = nil, []string{c.URL}
	return c, nil
}

// Frontier returns the pages a captured page of the crawl adds, in the order its links
// came: normalised loadable http(s) URLs, each once, of the start's origin (unless
// SameOrigin is off), passing include/exclude, and none when the page is at MaxDepth.
// The store drops those the batch already holds and stops at MaxPages.
func (c *Crawl) Frontier(parentDepth int, links []string) []CrawlPage {
	if parentDepth+1 > c.MaxDepth {
		return nil
	}
	var errs FieldErrors
	include := compilePatterns(c.Include, "include", &errs)
	exclude := compilePatterns(c.Exclude, "exclude", &errs)
	origin := originOf(dedupeKey(c.URL))
	seen := map[string]bool{}
	var out []CrawlPage
	for i, l := range links {
		if i >= MaxCrawlLinks {
			break
		}
		n, _, err := CheckBrowserURL(l)
		if err != nil {
			continue
		}
		key := dedupeKey(n)
		if seen[key] || (c.SameOrigin && originOf(key) != origin) || !MatchPatterns(n, include, exclude) {
			continue
		}
		seen[key] = true
		out = append(out, CrawlPage{URL: n, Key: key})
	}
	return out
}

// CrawlKey is a URL's identity in a crawl batch (a start page's, before its job exists).
func CrawlKey(normalized string) string { return dedupeKey(normalized) }

// CrawlStore adds a crawl page's links to its batch when it completes (store.Store).
type CrawlStore interface {
	// CompleteCrawlJob is CompleteAttempt of job's current attempt (job as
	// StartJob returned it, with its crawl position and its batch's
	// settings) that, in the same transaction and under the batch's lock,
	// adds the pages of job.Crawl.Pages(links) the batch does not hold yet,
	// up to max_pages jobs in the batch and, when maxInFlight > 0 and the
	// batch has an owner, up to the owner's in-flight cap. added is how
	// many it added; Settled is CompleteAttempt's.
	CompleteCrawlJob(ctx context.Context, job *Job, result *Result, arts []*Artifact,
		links []string, maxInFlight int) (settled Settled, added int, err error)
}

// crawlRequest makes a crawl job's capture collect links even when the batch did not ask.
func crawlRequest(job *Job, req *capture.Request) {
	if job.Crawl != nil && !slices.Contains(req.Outputs, capture.OutputLinks) {
		req.Outputs = append(slices.Clip(req.Outputs), capture.OutputLinks)
	}
}

// crawlLinks reads a crawl job's links from its capture and, unless the job's options ask
// for the links output, drops that file so it is not stored.
func crawlLinks(job *Job, res *capture.Result) []string {
	if job.Crawl == nil {
		return nil
	}
	keep := slices.Contains(job.Options.Outputs, capture.OutputLinks)
	var urls []string
	files := res.Files[:0:0]
	for _, f := range res.Files {
		if f.Kind != capture.OutputLinks {
			files = append(files, f)
			continue
		}
		var links []capture.Link
		if err := json.Unmarshal(f.Data, &links); err == nil {
			for _, l := range links {
				urls = append(urls, l.URL)
			}
		}
		if keep {
			files = append(files, f)
		}
	}
	res.Files = files
	return urls
}
