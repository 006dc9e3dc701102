package discover

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/html"

	"github.com/snapq/snapq/jobs"
)

// A suite's discovery by crawl (regression: discover.crawl) reads pages server-side, before
// a run's captures exist: plain HTTP GETs through a PageFetcher (the egress guard's client),
// breadth first from the start page to MaxDepth, following the <a href> links of HTML
// pages the way a crawl batch's frontier does (jobs.Crawl.Frontier: normalised, same origin,
// include/exclude). No script runs: links a page adds with JavaScript are not seen.

// Bounds of one discovery by crawl.
const (
	MaxLinkCrawlDepth     = 5
	LinkCrawlPageBytes    = 2 << 20          // bytes read of one page; the rest is ignored
	LinkCrawlTimeout      = 30 * time.Second // the whole crawl
	LinkCrawlPageTimeout  = 10 * time.Second // one fetch
	MaxLinkCrawlFetches   = 400              // requests in all (pages, redirects, non-HTML)
	maxLinkCrawlRedirects = 5
	// MaxLinkCrawlHostFetches bounds the requests to one host other than the start
	// page's (where the start lands after its redirects): a crawl with same_origin off
	// cannot be turned into a stream of requests at a third party.
	MaxLinkCrawlHostFetches = 20
	// MaxLinkCrawlHostFailures is the failed requests (no answer, a timeout, HTTP 429 or
	// 5xx) after which a host gets no more; they count as requests too.
	MaxLinkCrawlHostFailures = 5
)

// PageFetcher GETs one URL without following redirects and returns its status, its
// Location (for a redirect), its Content-Type and at most maxBytes of its body.
// Reader implements it over the egress guard's client.
type PageFetcher interface {
	FetchPage(ctx context.Context, rawURL string, maxBytes int64) (status int, location, contentType string, body []byte, err error)
}

// LinkCrawlStats tells what a discovery by crawl did.
type LinkCrawlStats struct {
	Fetches, NotHTML, Failed, Skipped int
	// HostCapped counts the requests not sent because their host was at
	// MaxLinkCrawlHostFetches or MaxLinkCrawlHostFailures.
	HostCapped int

	home     string         // the start page's host (after its redirects)
	perHost  map[string]int // requests sent per host
	failures map[string]int // failed requests per host
}

var errHostCapped = errors.New("its host has had as many requests as a crawl sends it")

// admit counts one request to u's host, or refuses it past the host's caps.
func (st *LinkCrawlStats) admit(u string) error {
	if st.perHost == nil {
		st.perHost, st.failures = map[string]int{}, map[string]int{}
	}
	h := jobs.TargetHost(u)
	if st.failures[h] >= MaxLinkCrawlHostFailures || (st.home != "" && h != st.home && st.perHost[h] >= MaxLinkCrawlHostFetches) {
		st.HostCapped++
		return fmt.Errorf("%s: %w", u, errHostCapped)
	}
	st.perHost[h]++
	return nil
}

// failed notes a failed request to u's host.
func (st *LinkCrawlStats) failed(u string, status int, err error) {
	if err != nil || status == 429 || status >= 500 {
		st.failures[jobs.TargetHost(u)]++
	}
}

// CrawlLinks discovers the pages of c by reading their HTML: the start page (which must be
// an HTML page) and the pages its links lead to, breadth first, at most c.MaxPages (the
// start page included), in the order they were found. The start page's redirects are
// followed anywhere (the crawl keeps to the origin it lands on); others only within that
// origin (when c.SameOrigin), and the page is the redirect's target. A linked
// page that fails, is not HTML or leaves the origin is not a page (Stats counts it).
// Errors are jobs.ValidationErrors on the field "url": crawl_unreachable when the start page
// cannot be read (or the crawl took longer than LinkCrawlTimeout), crawl_not_html when it
// is not an HTML page.
func CrawlLinks(ctx context.Context, f PageFetcher, c *jobs.Crawl) ([]string, LinkCrawlStats, error) {
	ctx, cancel := context.WithTimeout(ctx, LinkCrawlTimeout)
	defer cancel()
	var st LinkCrawlStats
	origin := jobs.Origin(c.URL)
	type item struct {
		url   string
		depth int
	}
	seen := map[string]bool{jobs.CrawlKey(c.URL): true}
	queue := []item{{c.URL, 0}}
	var pages []string
	for len(queue) > 0 && len(pages) < c.MaxPages {
		it := queue[0]
		queue = queue[1:]
		// The start page may redirect anywhere loadable (http to https, a www host): the
		// crawl then keeps to where it landed.
		final, body, err := fetchHTML(ctx, f, it.url, origin, c.SameOrigin && it.depth > 0, &st)
		if err == nil && it.depth == 0 {
			st.home = jobs.TargetHost(final) // other hosts get MaxLinkCrawlHostFetches
			cc := *c
			cc.URL = final
			c, origin = &cc, jobs.Origin(final)
		}
		if ctx.Err() != nil {
			var errs jobs.FieldErrors
			errs.Add("crawl_unreachable", "url", fmt.Sprintf("reading the pages took longer than %s (%d requests)", LinkCrawlTimeout, st.Fetches))
			return nil, st, jobs.ValidationErrors(errs)
		}
		if err != nil {
			if it.depth == 0 {
				return nil, st, startFailed(err)
			}
			st.count(err)
			continue
		}
		if k := jobs.CrawlKey(final); final != it.url {
			if seen[k] && it.depth > 0 {
				continue // redirected to a page already found
			}
			seen[k] = true
		}
		pages = append(pages, final)
		if it.depth >= c.MaxDepth {
			continue
		}
		for _, p := range c.Frontier(it.depth, ExtractLinks(body, final, jobs.MaxCrawlLinks)) {
			if seen[p.Key] {
				continue
			}
			seen[p.Key] = true
			queue = append(queue, item{p.URL, it.depth + 1})
		}
	}
	st.Skipped = len(queue)
	return pages, st, nil
}

var errNotHTML = errors.New("not an HTML page")

// startFailed is the error of a crawl whose start page could not be read.
func startFailed(err error) error {
	code := "crawl_unreachable"
	if errors.Is(err, errNotHTML) {
		code = "crawl_not_html"
	}
	var errs jobs.FieldErrors
	errs.Add(code, "url", err.Error())
	return jobs.ValidationErrors(errs)
}

// count notes a linked page that is not a page of the crawl: not HTML, or failed (a
// request its host's cap refused is counted as HostCapped already).
func (st *LinkCrawlStats) count(err error) {
	if errors.Is(err, errNotHTML) {
		st.NotHTML++
	} else if !errors.Is(err, errHostCapped) {
		st.Failed++
	}
}

// fetchHTML GETs u, following redirects that stay loadable (and in origin when
// sameOrigin), and returns the final normalised URL and the HTML body.
func fetchHTML(ctx context.Context, f PageFetcher, u, origin string, sameOrigin bool, st *LinkCrawlStats) (string, []byte, error) {
	for hop := 0; ; hop++ {
		if st.Fetches >= MaxLinkCrawlFetches {
			return "", nil, fmt.Errorf("more than %d requests", MaxLinkCrawlFetches)
		}
		if err := st.admit(u); err != nil {
			return "", nil, err
		}
		st.Fetches++
		fctx, cancel := context.WithTimeout(ctx, LinkCrawlPageTimeout)
		status, loc, ctype, body, err := f.FetchPage(fctx, u, LinkCrawlPageBytes)
		cancel()
		st.failed(u, status, err)
		if err != nil {
			return "", nil, err
		}
		if status >= 300 && status < 400 && loc != "" {
			if hop >= maxLinkCrawlRedirects {
				return "", nil, fmt.Errorf("%s: more than %d redirects", u, maxLinkCrawlRedirects)
			}
			next, _, err := jobs.CheckBrowserURL(resolve(u, loc))
			if err != nil {
				return "", nil, fmt.Errorf("%s redirects to %s: %v", u, loc, err)
			}
			if sameOrigin && jobs.Origin(next) != origin {
				return "", nil, fmt.Errorf("%s redirects out of %s", u, origin)
			}
			u = next
			continue
		}
		if status != 200 {
			return "", nil, fmt.Errorf("%s answered HTTP %d", u, status)
		}
		if !isHTMLType(ctype) {
			return "", nil, fmt.Errorf("%s: %w (Content-Type %q)", u, errNotHTML, ctype)
		}
		return u, body, nil
	}
}

// isHTMLType reports whether a Content-Type is HTML (a missing one counts: browsers sniff).
func isHTMLType(ctype string) bool {
	if strings.TrimSpace(ctype) == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ctype)
	return err == nil && (mt == "text/html" || mt == "application/xhtml+xml")
}

// ExtractLinks returns the href of a page's <a> (and <area>) elements, resolved against
// pageURL (or the page's first <base href>), at most max, in document order. It tokenises
// (no tree is built, so nesting costs nothing) and skips fragments-only, javascript: and
// mailto:-like links; jobs.CheckBrowserURL and the frontier decide the rest.
func ExtractLinks(body []byte, pageURL string, max int) []string {
	base, err := url.Parse(pageURL)
	if err != nil {
		return nil
	}
	z := html.NewTokenizer(bytes.NewReader(body))
	z.SetMaxBuf(64 << 10) // one token (a tag with its attributes) at most 64 KiB
	var out []string
	baseSeen := false
	for len(out) < max {
		tt := z.Next()
		if tt == html.ErrorToken {
			return out // io.EOF, or a token past SetMaxBuf: stop there
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		name, hasAttr := z.TagName()
		tag := string(name)
		if !hasAttr || (tag != "a" && tag != "area" && tag != "base") {
			continue
		}
		var href string
		for more := true; more; {
			var k, v []byte
			k, v, more = z.TagAttr()
			if string(k) == "href" {
				href = strings.TrimSpace(string(v))
				break
			}
		}
		if href == "" {
			continue
		}
		ref, err := url.Parse(href)
		if err != nil {
			continue
		}
		if tag == "base" {
			if !baseSeen {
				baseSeen = true
				base = base.ResolveReference(ref)
			}
			continue
		}
		abs := base.ResolveReference(ref)
		if abs.Scheme != "http" && abs.Scheme != "https" {
			continue
		}
		abs.Fragment, abs.RawFragment = "", ""
		out = append(out, abs.String())
	}
	return out
}
