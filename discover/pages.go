package discover

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/snapq/snapq/jobs"
)

// SitemapReader walks a site's sitemaps and hands each page URL to keep until keep says
// stop. Reader implements it over the egress guard's HTTP client (wired in cmd/api).
// Its errors may carry a stable code through a ProblemCode method.
type SitemapReader interface {
	Read(ctx context.Context, rawURL string, keep func(pageURL string) (stop bool)) error
}

var _ jobs.SitemapPages = (*Reader)(nil)

// SitemapPages implements jobs.SitemapPages: ReadSitemap with r.
func (r *Reader) SitemapPages(ctx context.Context, u string, limit int, include, exclude []*regexp.Regexp) ([]string, error) {
	return ReadSitemap(ctx, r, u, limit, include, exclude)
}

// ReadSitemap reads the sitemap at u (normalised) with r and returns its unique
// (normalised) loadable page URLs that pass include/exclude, at most limit, in sitemap
// order. Its errors are ValidationErrors on the field "sitemap": the reader's problem code
// (sitemap_unreachable by default), or sitemap_empty when no page is left.
func ReadSitemap(ctx context.Context, r SitemapReader, u string, limit int, include, exclude []*regexp.Regexp) ([]string, error) {
	seen := map[string]bool{}
	var urls []string
	looked, skipped := 0, 0
	err := r.Read(ctx, u, func(page string) bool {
		looked++
		n, _, err := jobs.CheckBrowserURL(page)
		if err != nil {
			skipped++
			return false
		}
		if !jobs.MatchPatterns(n, include, exclude) {
			return false
		}
		key := jobs.CrawlKey(n)
		if seen[key] {
			return false
		}
		seen[key] = true
		urls = append(urls, n)
		return len(urls) >= limit
	})
	var errs jobs.FieldErrors
	if err != nil {
		code := "sitemap_unreachable"
		var pe interface{ ProblemCode() string }
		if errors.As(err, &pe) {
			code = pe.ProblemCode()
		}
		errs.Add(code, "sitemap", err.Error())
		return nil, jobs.ValidationErrors(errs)
	}
	if len(urls) == 0 {
		errs.Add("sitemap_empty", "sitemap",
			fmt.Sprintf("no page URL to capture: %d listed, %d not loadable http(s) URLs, the rest filtered out by include/exclude", looked, skipped))
		return nil, jobs.ValidationErrors(errs)
	}
	return urls, nil
}
