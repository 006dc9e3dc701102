package jobs

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// URL patterns and identities shared by sitemap and crawl batches (and discover/):
// include/exclude globs, a URL's identity for de-duplication, its origin.

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

// MatchPatterns reports whether u passes include and exclude (CompilePatterns): no
// exclude matches it and, when there are includes, one of them does.
func MatchPatterns(u string, include, exclude []*regexp.Regexp) bool {
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

// originOf is scheme://host[:port] of a dedupeKey.
func originOf(key string) string {
	u, err := url.Parse(key)
	if err != nil {
		return key
	}
	return u.Scheme + "://" + u.Host
}

// Origin is scheme://host[:port] of a normalised URL, the default port dropped: a
// crawl's same_origin compares these.
func Origin(normalized string) string { return originOf(dedupeKey(normalized)) }
