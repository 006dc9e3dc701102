package jobs

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
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

// unsafePorts are the ports Chromium refuses to connect to (ERR_UNSAFE_PORT), from
// kRestrictedPorts in Chromium's net/base/port_util.cc, which follows the Fetch standard's
// "bad port" list plus 10080. A target on one of them could never be captured.
var unsafePorts = map[int]bool{}

func init() {
	for _, p := range []int{
		1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95,
		101, 102, 103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161,
		179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563,
		587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060,
		5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
	} {
		unsafePorts[p] = true
	}
}

// UnsafePort reports the explicit port of an absolute URL when Chromium would refuse it
// (ERR_UNSAFE_PORT), so the API can reject the target at submit instead of failing a job.
func UnsafePort(rawURL string) (int, bool) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(u.Port())
	if err != nil || !unsafePorts[n] {
		return 0, false
	}
	return n, true
}

// CheckBrowserURL is NormalizeURL for a URL the browser will load: it also refuses a port
// Chromium never connects to. Its error names the code to report.
func CheckBrowserURL(raw string) (normalized, code string, err error) {
	u, err := NormalizeURL(raw)
	if err != nil {
		return "", "invalid_url", err
	}
	if p, bad := UnsafePort(u); bad {
		return "", "unsafe_port", fmt.Errorf("port %d is one Chromium refuses to connect to (ERR_UNSAFE_PORT: a restricted port such as SMTP, SSH or IRC); use another port", p)
	}
	return u, "", nil
}
