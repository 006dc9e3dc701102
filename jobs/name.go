package jobs

import (
	"net/url"
	"strings"
)

const maxSanitizedName = 100

// SanitizeName keeps ASCII letters, digits, '.', '-' and '_'; every other run
// of characters becomes one '-'. Leading and trailing '.', '-' are trimmed so a
// name can never be "..", hidden, or empty-looking. The result is at most 100
// bytes; it may be empty.
func SanitizeName(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range s {
		ok := r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_')
		if ok && !(r == '-' && dash) {
			b.WriteRune(r)
			dash = r == '-'
			continue
		}
		if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), ".-")
	for strings.Contains(out, "..") {
		out = strings.ReplaceAll(out, "..", ".")
	}
	if len(out) > maxSanitizedName {
		out = strings.TrimRight(out[:maxSanitizedName], ".-")
	}
	return out
}

// NameFromURL derives a file-name base from a URL's host and path, e.g.
// "https://example.com/docs/intro?x=1" → "example.com-docs-intro".
func NameFromURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "page"
	}
	base := u.Hostname()
	if p := u.Port(); p != "" {
		base += "_" + p
	}
	if path := strings.Trim(u.EscapedPath(), "/"); path != "" {
		base += "-" + path
	}
	if n := SanitizeName(base); n != "" {
		return n
	}
	return "page"
}
