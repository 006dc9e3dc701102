// Package mdpage holds the page chrome and prose of the Markdown tests, shared by the
// codec's own tests (capture/internal/markdown) and the end-to-end test that builds the
// same page through Chromium (capture). It is test data: nothing in production imports it.
package mdpage

import (
	"fmt"
	"strings"
)

// Para returns n distinct sentences of prose, long enough for readability to score.
func Para(tag string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "<p>%s paragraph %d holds the story: the committee met on a wet Tuesday, weighed the budget, "+
			"argued about the bridge, and agreed, after a long and careful debate, to fund the repairs.</p>\n", tag, i)
	}
	return b.String()
}

// Page chrome a reader view must drop; each holds a marker word the tests look for.
const (
	Nav = `<nav class="menu"><ul><li><a href="/">Home</a></li><li><a href="/world">NAVWORLD</a></li>
<li><a href="/sport">NAVSPORT</a></li><li><a href="/weather">NAVWEATHER</a></li></ul></nav>`
	Aside = `<aside class="sidebar"><h3>Popular</h3><ul><li><a href="/p1">SIDEBAR one</a></li>
<li><a href="/p2">SIDEBAR two</a></li></ul></aside>`
	Footer = `<footer class="footer"><a href="/terms">FOOTERTERMS</a> <a href="/privacy">Privacy</a> © 2026</footer>`
)
