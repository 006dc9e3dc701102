package regression

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"strings"

	"github.com/snapq/snapq/discover"
	"github.com/snapq/snapq/jobs"
)

// A suite with "discover" finds pages on every run: from a sitemap, read through the
// egress guard like a sitemap batch's, or by a bounded crawl of the site's HTML links
// (discover.crawl, discover.CrawlLinks: plain GETs through the same guard, no scripts run). The discovered pages join the suite's static
// targets, named from their URL path so a page keeps its baselines from run to run. A page
// that appears has no baseline: its comparisons are new. A page that disappeared keeps its
// baselines but has no capture: the run gets a missing comparison per baseline segment
// (no job), which approving removes.

// DefaultDiscoverLimit is discover.limit's default.
const DefaultDiscoverLimit = 50

// Discover is a suite's discovery, as validated.
type Discover struct {
	Sitemap string `json:"sitemap,omitempty"`
	Limit   int    `json:"limit,omitempty"` // the sitemap's pages taken (0 with crawl)
	// Crawl, instead of Sitemap, finds the pages by following links from a start page.
	Crawl   *jobs.Crawl `json:"crawl,omitempty"`
	Include []string    `json:"include,omitempty"`
	Exclude []string    `json:"exclude,omitempty"`
	// Options are the discovered targets' options over the suite's.
	Options *jobs.OptionsInput `json:"options,omitempty"`
}

// DiscoverInput is the wire form of Discover.
type DiscoverInput struct {
	Sitemap string              `json:"sitemap"`
	Crawl   *DiscoverCrawlInput `json:"crawl"`
	Limit   *float64            `json:"limit"`
	Include []string            `json:"include"`
	Exclude []string            `json:"exclude"`
	Options *jobs.OptionsInput  `json:"options"`
}

// DiscoverCrawlInput is the wire form of discover.crawl.
type DiscoverCrawlInput struct {
	URL        string   `json:"url"`
	MaxDepth   *float64 `json:"max_depth"`
	MaxPages   *float64 `json:"max_pages"`
	Include    []string `json:"include"`
	Exclude    []string `json:"exclude"`
	SameOrigin *bool    `json:"same_origin"`
}

// DefaultDiscoverCrawlPages is discover.crawl.max_pages's default.
const DefaultDiscoverCrawlPages = MaxSuiteTargets

func validateDiscover(in *DiscoverInput, suiteOpts *jobs.OptionsInput, errs *jobs.FieldErrors) *Discover {
	if in == nil {
		return nil
	}
	d := &Discover{Include: in.Include, Exclude: in.Exclude, Options: in.Options}
	switch {
	case in.Crawl != nil && in.Sitemap != "":
		errs.Add("invalid_field", "discover", "give either discover.sitemap or discover.crawl, not both")
	case in.Crawl != nil:
		d.Crawl = validateDiscoverCrawl(in.Crawl, errs)
		if in.Limit != nil {
			errs.Add("invalid_field", "discover.limit", "limit is a sitemap's: a crawl takes discover.crawl.max_pages")
		}
		if in.Include != nil {
			errs.Add("invalid_field", "discover.include", "a crawl takes discover.crawl.include")
		}
		if in.Exclude != nil {
			errs.Add("invalid_field", "discover.exclude", "a crawl takes discover.crawl.exclude")
		}
	case in.Sitemap == "":
		errs.Add("required", "discover.sitemap", "give the URL of the sitemap (or robots.txt) the pages are read from on every run, or discover.crawl")
	default:
		d.Limit = DefaultDiscoverLimit
		if u, err := jobs.NormalizeURL(in.Sitemap); err != nil {
			errs.Add("invalid_url", "discover.sitemap", err.Error())
		} else {
			d.Sitemap = u
		}
		if in.Limit != nil {
			if l := *in.Limit; l != math.Trunc(l) || l < 1 || l > MaxSuiteTargets {
				errs.Add("invalid_option", "discover.limit", fmt.Sprintf("must be a whole number from 1 to %d", MaxSuiteTargets))
			} else {
				d.Limit = int(l)
			}
		}
		jobs.CompilePatterns(in.Include, "discover.include", errs)
		jobs.CompilePatterns(in.Exclude, "discover.exclude", errs)
	}
	jobs.ResolveOptions(suiteOpts, "options", in.Options, "discover.options", errs)
	return d
}

// validateDiscoverCrawl checks discover.crawl: a loadable start URL, max_depth 0 to
// discover.MaxLinkCrawlDepth (default 2), max_pages 1 to the suite's target limit.
func validateDiscoverCrawl(in *DiscoverCrawlInput, errs *jobs.FieldErrors) *jobs.Crawl {
	c := &jobs.Crawl{MaxDepth: jobs.DefaultCrawlDepth, MaxPages: DefaultDiscoverCrawlPages, SameOrigin: true,
		Include: in.Include, Exclude: in.Exclude}
	if in.URL == "" {
		errs.Add("required", "discover.crawl.url", "the page the crawl starts from")
	} else if u, code, err := jobs.CheckBrowserURL(in.URL); err != nil {
		errs.Add(code, "discover.crawl.url", err.Error())
	} else {
		c.URL = u
	}
	if in.MaxDepth != nil {
		if v := *in.MaxDepth; v != math.Trunc(v) || v < 0 || v > discover.MaxLinkCrawlDepth {
			errs.Add("invalid_option", "discover.crawl.max_depth", fmt.Sprintf("must be a whole number from 0 to %d (0: the start page only)", discover.MaxLinkCrawlDepth))
		} else {
			c.MaxDepth = int(v)
		}
	}
	if in.MaxPages != nil {
		if v := *in.MaxPages; v != math.Trunc(v) || v < 1 || v > MaxSuiteTargets {
			errs.Add("invalid_option", "discover.crawl.max_pages", fmt.Sprintf("must be a whole number from 1 to %d (a suite's target limit)", MaxSuiteTargets))
		} else {
			c.MaxPages = int(v)
		}
	}
	if in.SameOrigin != nil {
		c.SameOrigin = *in.SameOrigin
	}
	jobs.CompilePatterns(in.Include, "discover.crawl.include", errs)
	jobs.CompilePatterns(in.Exclude, "discover.crawl.exclude", errs)
	return c
}

// DiscoveredName is a discovered page's target name: "page-" and its path (and query),
// sanitised; "page-home" for the site's root. It does not depend on the host, so a run
// against another base URL keeps the names.
func DiscoveredName(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "page"
	}
	p := strings.Trim(u.EscapedPath(), "/")
	if u.RawQuery != "" {
		p += "-" + u.RawQuery
	}
	if p == "" {
		p = "home"
	}
	if n := jobs.SanitizeName("page-" + p); n != "" {
		return n
	}
	return "page"
}

// discover reads the suite's sitemap (or crawls its site) and returns spec's targets with
// the discovered pages after the static ones: a page whose URL or name a static target has
// is skipped.
func (g *Service) discover(ctx context.Context, spec SuiteSpec) ([]SuiteTarget, error) {
	d := spec.Discover
	var errs jobs.FieldErrors
	if d.Crawl != nil {
		if g.Pages == nil {
			errs.Add("invalid_field", "discover.crawl", "this server does not crawl pages")
			return nil, jobs.ValidationErrors(errs)
		}
		urls, _, err := discover.CrawlLinks(ctx, g.Pages, d.Crawl)
		if ve, ok := err.(*jobs.ValidationError); ok {
			for i := range ve.Fields {
				ve.Fields[i].Field = "discover.crawl." + ve.Fields[i].Field
			}
			return nil, ve
		} else if err != nil {
			return nil, err
		}
		return discoveredTargets(spec, urls), nil
	}
	if g.Sitemaps == nil {
		errs.Add("invalid_field", "discover", "this server does not read sitemaps")
		return nil, jobs.ValidationErrors(errs)
	}
	include := jobs.CompilePatterns(d.Include, "discover.include", &errs)
	exclude := jobs.CompilePatterns(d.Exclude, "discover.exclude", &errs)
	urls, err := discover.ReadSitemap(ctx, g.Sitemaps, d.Sitemap, d.Limit, include, exclude)
	if ve, ok := err.(*jobs.ValidationError); ok {
		for i := range ve.Fields {
			ve.Fields[i].Field = "discover." + ve.Fields[i].Field
		}
		return nil, ve
	} else if err != nil {
		return nil, err
	}
	return discoveredTargets(spec, urls), nil
}

// discoveredTargets is spec's targets followed by the discovered pages' (named by
// DiscoveredName), without a page whose URL or name a target already has.
func discoveredTargets(spec SuiteSpec, urls []string) []SuiteTarget {
	d := spec.Discover
	out := append([]SuiteTarget(nil), spec.Targets...)
	names, seen := map[string]bool{}, map[string]bool{}
	for _, t := range spec.Targets {
		names[t.Name], seen[t.URL] = true, true
	}
	for _, u := range urls {
		name := DiscoveredName(u)
		if names[name] || seen[u] {
			continue
		}
		names[name], seen[u] = true, true
		out = append(out, SuiteTarget{URL: u, Name: name, Options: d.Options})
	}
	return out
}

// baselineLister reads active baselines (store.Store).
type baselineLister interface {
	ListBaselines(ctx context.Context, suiteID, branch string, history bool) ([]*Baseline, error)
}

// removedComparisons are the missing comparisons of the pages a discovering suite has
// baselines for (on the run's baseline branches, the nearest first) but no target in this
// run: one per active baseline segment.
func (g *Service) removedComparisons(ctx context.Context, r *Run, suiteID string, keys []CaptureKey) ([]*Comparison, error) {
	bl, ok := g.Repo.(baselineLister)
	if !ok {
		return nil, nil
	}
	have := map[string]bool{}
	for _, k := range keys {
		have[k.Target] = true
	}
	taken := map[string]string{} // target → the branch its baselines come from
	var out []*Comparison
	for _, branch := range r.BaselineBranches() {
		bases, err := bl.ListBaselines(ctx, suiteID, branch, false)
		if err != nil {
			return nil, fmt.Errorf("baselines of %s: %w", branch, err)
		}
		for _, b := range bases {
			if have[b.Target] || b.Artifact == nil {
				continue
			}
			if from, ok := taken[b.Target]; ok && from != branch {
				continue
			}
			taken[b.Target] = branch
			out = append(out, &Comparison{ID: jobs.NewID(), RunID: r.ID, Target: b.Target, Viewport: b.Viewport,
				Segment: b.Segment, Checkpoint: b.Checkpoint, Status: CompareMissing, DiffMode: DiffPixel,
				Message: "the page is no longer discovered", BaselineID: b.ID, BaselineArtifact: b.Artifact})
		}
	}
	return out, nil
}
