package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strings"
)

// SitemapReader walks a site's sitemaps and hands each page URL to keep until keep says
// stop. sitemap.Reader implements it over the egress guard's HTTP client (wired in cmd/api).
// Its errors may carry a stable code through a ProblemCode method.
type SitemapReader interface {
	Read(ctx context.Context, rawURL string, keep func(pageURL string) (stop bool)) error
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

// expandSitemap turns a body that names a sitemap into the same body with "urls": the
// unique (normalised) page URLs of the sitemap that pass include/exclude, at most limit.
// A body without sitemap fields is returned as it is; any other problem of the body is
// left to ParseBatchRequest.
func (s *Service) expandSitemap(ctx context.Context, body []byte, owner string) ([]byte, error) {
	var req BatchRequest
	if _, ok := DecodeStrict(body, &req, ""); !ok || !req.sitemapGiven() {
		return body, nil
	}
	maxTargets := s.MaxTargets
	if maxTargets <= 0 {
		maxTargets = MaxTargets
	}
	f := req
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
		return nil, err
	}

	urls, err := s.readSitemap(ctx, owner, u, limit, include, exclude)
	if err != nil {
		return nil, err
	}

	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, err // DecodeStrict accepted it
	}
	for _, k := range []string{"sitemap", "limit", "include", "exclude"} {
		delete(raw, k)
	}
	raw["urls"], _ = json.Marshal(urls)
	return json.Marshal(raw)
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
	return ReadSitemap(ctx, s.Sitemaps, u, limit, include, exclude)
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
		n, _, err := CheckBrowserURL(page)
		if err != nil {
			skipped++
			return false
		}
		if !matchPatterns(n, include, exclude) {
			return false
		}
		key := dedupeKey(n)
		if seen[key] {
			return false
		}
		seen[key] = true
		urls = append(urls, n)
		return len(urls) >= limit
	})
	if err != nil {
		code := "sitemap_unreachable"
		var pe interface{ ProblemCode() string }
		if errors.As(err, &pe) {
			code = pe.ProblemCode()
		}
		return nil, ValidationErrors(FieldErrors{{Code: code, Field: "sitemap", Message: err.Error()}})
	}
	if len(urls) == 0 {
		return nil, ValidationErrors(FieldErrors{{Code: "sitemap_empty", Field: "sitemap",
			Message: fmt.Sprintf("no page URL to capture: %d listed, %d not loadable http(s) URLs, the rest filtered out by include/exclude", looked, skipped)}})
	}
	return urls, nil
}

// CompilePatterns checks include/exclude globs (the sitemap's syntax), recording problems
// on field in errs, and returns them compiled.
func CompilePatterns(pats []string, field string, errs *FieldErrors) []*regexp.Regexp {
	return compilePatterns(pats, field, errs)
}

// compilePatterns reads include/exclude globs: "*" matches any run of characters; a pattern
// starting with "/" matches the URL's path and query, any other the whole URL.
func compilePatterns(pats []string, field string, errs *FieldErrors) []*regexp.Regexp {
	if len(pats) > MaxSitemapPatterns {
		errs.Add("invalid_option", field, fmt.Sprintf("at most %d patterns", MaxSitemapPatterns))
		return nil
	}
	out := make([]*regexp.Regexp, 0, len(pats))
	for i, p := range pats {
		if p == "" || len(p) > MaxSitemapPatternLength {
			errs.Add("invalid_option", fmt.Sprintf("%s[%d]", field, i), fmt.Sprintf("a pattern is 1 to %d characters", MaxSitemapPatternLength))
			continue
		}
		re := "^" + strings.ReplaceAll(regexp.QuoteMeta(p), `\*`, ".*") + "$"
		out = append(out, regexp.MustCompile(re))
	}
	return out
}

func matchPatterns(u string, include, exclude []*regexp.Regexp) bool {
	subject := func(re *regexp.Regexp) string {
		if strings.HasPrefix(re.String(), "^/") {
			p, err := url.Parse(u)
			if err != nil {
				return u
			}
			if p.RawQuery != "" {
				return p.EscapedPath() + "?" + p.RawQuery
			}
			return p.EscapedPath()
		}
		return u
	}
	for _, re := range exclude {
		if re.MatchString(subject(re)) {
			return false
		}
	}
	if len(include) == 0 {
		return true
	}
	for _, re := range include {
		if re.MatchString(subject(re)) {
			return true
		}
	}
	return false
}

// dedupeKey is a normalised URL's identity for de-duplication: an empty path is "/" and a
// scheme's default port is dropped, so https://a.test, https://a.test/ and
// https://a.test:443/ are one page.
func dedupeKey(normalized string) string {
	p, err := url.Parse(normalized)
	if err != nil {
		return normalized
	}
	if (p.Scheme == "http" && p.Port() == "80") || (p.Scheme == "https" && p.Port() == "443") {
		p.Host = p.Hostname()
		if strings.Contains(p.Host, ":") {
			p.Host = "[" + p.Host + "]"
		}
	}
	if p.Path == "" && p.RawPath == "" {
		p.Path = "/"
	}
	return p.String()
}
