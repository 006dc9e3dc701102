package filterlist

import (
	"strings"

	"github.com/AdguardTeam/urlfilter"
)

// Element hiding: "##selector" hides matching elements on every page,
// "a.com,b.com##selector" on those sites only, "a.com#@#selector" lifts a
// rule there. urlfilter v0.5 parses these rules but does not yet select
// them by host, so this file indexes them. Selectors of extended syntax
// (uBlock's and AdGuard's procedural ones, which CSS cannot express) are
// left out: a page's style sheet must stay valid.

// MaxSelectorLength bounds one selector kept.
const MaxSelectorLength = 500

// cosmetic is one category's element-hiding rules.
type cosmetic struct {
	generic []*urlfilter.CosmeticRule            // no permitted domain
	byHost  map[string][]*urlfilter.CosmeticRule // by each permitted domain
	allow   map[string][]*urlfilter.CosmeticRule // exceptions, by selector
	n       int
}

// extended marks selectors CSS cannot apply.
var extended = []string{":-abp-", ":has-text", ":contains(", ":xpath(", ":upward(", ":matches-css", ":style(",
	":remove(", ":min-text-length", ":watch-attr", ":others(", ":matches-path", ":matches-attr", ":matches-prop", "+js("}

// parseCosmetic indexes the element-hiding rules of text.
func parseCosmetic(text string, id int) *cosmetic {
	c := &cosmetic{byHost: map[string][]*urlfilter.CosmeticRule{}, allow: map[string][]*urlfilter.CosmeticRule{}}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		i := strings.Index(line, "#")
		if i < 0 || strings.HasPrefix(line, "!") || !(strings.HasPrefix(line[i:], "##") || strings.HasPrefix(line[i:], "#@#")) {
			continue
		}
		r, err := urlfilter.NewCosmeticRule(line, id)
		if err != nil || r.Type != urlfilter.CosmeticElementHiding || !plainCSS(r.Content) {
			continue
		}
		c.n++
		if r.Whitelist {
			c.allow[r.Content] = append(c.allow[r.Content], r)
			continue
		}
		hosts := permitted(line[:i])
		if len(hosts) == 0 {
			c.generic = append(c.generic, r)
		}
		for _, h := range hosts {
			c.byHost[h] = append(c.byHost[h], r)
		}
	}
	return c
}

// plainCSS reports whether sel is a selector a style sheet can hold.
func plainCSS(sel string) bool {
	if sel == "" || len(sel) > MaxSelectorLength || strings.ContainsAny(sel, "{}") {
		return false
	}
	for _, x := range extended {
		if strings.Contains(sel, x) {
			return false
		}
	}
	return true
}

// permitted is the domains of a rule's prefix that are not negated.
func permitted(prefix string) []string {
	var out []string
	for _, d := range strings.Split(prefix, ",") {
		if d = strings.TrimSpace(strings.ToLower(d)); d != "" && !strings.HasPrefix(d, "~") {
			out = append(out, d)
		}
	}
	return out
}

// size is how many element-hiding rules were kept.
func (c *cosmetic) size() int { return c.n }

// selectors is the selectors to hide on a page of host.
func (c *cosmetic) selectors(host string) []string {
	host = strings.ToLower(host)
	seen := map[string]bool{}
	var out []string
	add := func(r *urlfilter.CosmeticRule) {
		if seen[r.Content] || !r.Match(host) {
			return
		}
		for _, a := range c.allow[r.Content] {
			if a.Match(host) {
				return
			}
		}
		seen[r.Content] = true
		out = append(out, r.Content)
	}
	for _, r := range c.generic {
		add(r)
	}
	for h := host; h != ""; {
		for _, r := range c.byHost[h] {
			add(r)
		}
		i := strings.IndexByte(h, '.')
		if i < 0 {
			break
		}
		h = h[i+1:]
	}
	return out
}

// Selectors is, by category of cats, the element-hiding selectors for a
// page of host.
func (e *Engine) Selectors(host string, cats []string) map[string][]string {
	out := map[string][]string{}
	for _, c := range Categories() {
		if cat := e.cats[c]; cat != nil && contains(cats, c) {
			if s := cat.cosmetic.selectors(host); len(s) > 0 {
				out[c] = s
			}
		}
	}
	return out
}
