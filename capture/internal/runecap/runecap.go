// Package runecap cuts text to a number of characters without splitting a line when it can.
// capture caps a download's Markdown with it and capture/internal/markdown a page's, so the
// two cut alike; it imports nothing, so capture can use it without an HTML parser.
package runecap

import (
	"strings"
	"unicode/utf8"
)

// Cut cuts s to at most max characters, at the last line break of the final tenth
// when there is one, so a cut rarely splits a line; it reports whether it cut.
func Cut(s string, max int) (string, bool) {
	if utf8.RuneCountInString(s) <= max {
		return s, false
	}
	cut, n := 0, 0
	for i := range s {
		if n == max {
			cut = i
			break
		}
		n++
	}
	s = s[:cut]
	if i := strings.LastIndexByte(s, '\n'); i > 0 && utf8.RuneCountInString(s[i:]) <= max/10 {
		s = s[:i]
	}
	return strings.TrimRight(s, " \n"), true
}
