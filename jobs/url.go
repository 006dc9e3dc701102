package jobs

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// NormalizeURL checks that raw is an absolute http(s) URL without user
// information and returns it in canonical form. It checks the text only;
// where the name resolves to is the egress guard's business.
func NormalizeURL(raw string) (string, error) {
	if strings.TrimSpace(raw) == "" {
		return "", errors.New("url is required")
	}
	if len(raw) > MaxURLLength {
		return "", fmt.Errorf("url is %d characters; the limit is %d", len(raw), MaxURLLength)
	}
	if raw != strings.TrimSpace(raw) {
		return "", errors.New("url has leading or trailing spaces")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("url does not parse: %w", errors.Unwrap(err))
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return "", errors.New("url must be absolute, starting with http:// or https://")
	default:
		return "", fmt.Errorf("scheme %q is not allowed; only http and https", u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return "", errors.New("url must have a host, like https://example.com/")
	}
	if u.User != nil {
		return "", errors.New("url must not contain user information (user:password@)")
	}
	if p := u.Port(); p != "" {
		var n int
		if _, err := fmt.Sscanf(p, "%d", &n); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("port %q is out of range", p)
		}
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	u.Fragment = ""
	u.RawFragment = ""
	// A space stays raw in a query (url.Parse keeps the query as given); encode it as a
	// browser would, so the result never ends in a space and normalizes to itself.
	u.RawQuery = strings.ReplaceAll(u.RawQuery, " ", "%20")
	return u.String(), nil
}
