package jobs

import (
	"context"
	"fmt"
	"math"
	"regexp"
)

// SitemapPages reads the page URLs a batch's sitemap lists: unique, normalised, loadable,
// passing include/exclude, at most limit, in sitemap order (discover.Reader, over the
// egress guard's HTTP client, wired in cmd/api). Its errors are ValidationErrors on the
// field "sitemap".
type SitemapPages interface {
	SitemapPages(ctx context.Context, sitemapURL string, limit int, include, exclude []*regexp.Regexp) ([]string, error)
}

// Sitemap request bounds.
const (
	MaxSitemapPatterns      = 50
	MaxSitemapPatternLength = 500
)

// sitemapGiven reports whether the body asks for its targets from a sitemap.
func (r *BatchRequest) sitemapGiven() bool {
	return r.Sitemap != "" || r.Limit != nil || r.Include != nil || r.Exclude != nil
}

// expandSitemap turns a decoded body (ok: DecodeStrict filled it) that names a sitemap
// into the same body with "urls": the unique (normalised) page URLs of the sitemap that
// pass include/exclude, at most limit. A body without sitemap fields is left as it is;
// any other problem of the body is left to validateBatch.
func (s *Service) expandSitemap(ctx context.Context, req *BatchRequest, ok bool, owner string) error {
	if !ok || !req.sitemapGiven() {
		return nil
	}
	maxTargets := s.MaxTargets
	if maxTargets <= 0 {
		maxTargets = MaxTargets
	}
	f := *req
	var errs FieldErrors
	if f.Sitemap == "" {
		errs.Add("required", "sitemap", "limit, include and exclude apply to a sitemap: give its URL")
	}
	if len(req.Targets)+len(req.URLs) > 0 {
		errs.Add("invalid_field", "sitemap", "give either sitemap or targets/urls, not both")
	}
	u := ""
	if f.Sitemap != "" {
		var err error
		if u, err = NormalizeURL(f.Sitemap); err != nil {
			errs.Add("invalid_url", "sitemap", err.Error())
		}
	}
	limit := maxTargets
	if f.Limit != nil {
		if l := *f.Limit; l != math.Trunc(l) || l < 1 || l > float64(maxTargets) {
			errs.Add("invalid_option", "limit", fmt.Sprintf("must be a whole number from 1 to %d (the batch size limit)", maxTargets))
		} else {
			limit = int(l)
		}
	}
	include := compilePatterns(f.Include, "include", &errs)
	exclude := compilePatterns(f.Exclude, "exclude", &errs)
	if s.Sitemaps == nil && len(errs) == 0 {
		errs.Add("invalid_field", "sitemap", "this server does not read sitemaps")
	}
	if err := ValidationErrors(errs); err != nil {
		return err
	}

	urls, err := s.readSitemap(ctx, owner, u, limit, include, exclude)
	if err != nil {
		return err
	}
	req.Sitemap, req.Limit, req.Include, req.Exclude = "", nil, nil, nil
	req.URLs = urls
	return nil
}

// readSitemap reads a batch's sitemap once the owner may add a job (the in-flight cap,
// checked before the fetch) and its budget admits the read.
func (s *Service) readSitemap(ctx context.Context, owner, u string, limit int, include, exclude []*regexp.Regexp) ([]string, error) {
	if err := CheckInFlight(ctx, s.Repo, owner, 1, s.MaxInFlight); err != nil {
		return nil, err
	}
	release, err := acquireWork(ctx, s.Budget, owner, WorkDiscover)
	if err != nil {
		return nil, err
	}
	defer release()
	return s.Sitemaps.SitemapPages(ctx, u, limit, include, exclude)
}
