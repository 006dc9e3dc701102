package capture

import (
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
)

// Filter-list blocking (Block.Ads, Block.Trackers, Block.ChatWidgets,
// Block.Social, Block.CookieBanners): the
// job's requests are paused at the request stage (Fetch), matched against
// the worker's filter lists (Config.Filter, filterlist.Engine wired in
// cmd/worker) and failed as blocked by the client when a turned-on
// category's network rule matches; the main document is never blocked.
// After the page loads, the categories' element-hiding rules go into a
// style sheet of their own (display: none), which also hides elements that
// appear later; the result counts both per category (Result.Blocking).

// Filter categories.
const (
	FilterAds           = "ads"
	FilterTrackers      = "trackers"
	FilterChatWidgets   = "chat_widgets"
	FilterSocial        = "social"
	FilterCookieBanners = "cookie_banners"
)

// Filter is the filter-list engine capture needs (*filterlist.Engine).
type Filter interface {
	// Match is the first of cats whose lists block a request for rawURL
	// of a CDP resource type made by a page at pageURL, "" for none.
	Match(rawURL, pageURL, resourceType string, mainFrame bool, cats []string) string
	// Selectors is, by category of cats, the selectors to hide on host.
	Selectors(host string, cats []string) map[string][]string
}

// Blocking counts what the filter lists blocked, by category.
type Blocking struct {
	Requests map[string]int `json:"requests"`
	Elements map[string]int `json:"elements"`
}

// Categories are the filter categories b turns on, in a fixed order.
func (b Block) Categories() []string {
	var out []string
	for _, c := range []struct {
		on   bool
		name string
	}{{b.Ads, FilterAds}, {b.Trackers, FilterTrackers}, {b.ChatWidgets, FilterChatWidgets},
		{b.Social, FilterSocial}, {b.CookieBanners, FilterCookieBanners}} {
		if c.on {
			out = append(out, c.name)
		}
	}
	return out
}

// blockState is the blocking of the current job, read by the request
// handler off the event loop (under tab.mu).
type blockState struct {
	types    map[proto.NetworkResourceType]bool
	cats     []string
	requests map[string]int
}

// setBlockState starts the job's blocking state, its counters at zero.
func (t *tab) setBlockState(types []string, cats []string) {
	bs := blockState{types: map[proto.NetworkResourceType]bool{}, cats: cats, requests: map[string]int{}}
	for _, rt := range types {
		bs.types[resourceTypes[rt]] = true
	}
	t.mu.Lock()
	t.blocking = bs
	t.mu.Unlock()
}

// requestPaused decides one request paused at the request stage: a blocked
// resource type fails, so does a request a turned-on category's lists
// block (counted); everything else goes on.
func (t *tab) requestPaused(e proto.FetchRequestPaused) {
	t.mu.Lock()
	bs := t.blocking
	page := t.st.docURL
	if page == "" {
		page = t.st.frameURL
	}
	t.mu.Unlock()
	if bs.types[e.ResourceType] {
		t.failPaused(e.RequestID)
		return
	}
	main := e.ResourceType == proto.NetworkResourceTypeDocument && e.FrameID == t.page.FrameID
	if f := t.inst.cfg.Filter; f != nil && !main && len(bs.cats) > 0 && e.Request != nil {
		if c := f.Match(e.Request.URL, page, string(e.ResourceType), false, bs.cats); c != "" {
			t.mu.Lock()
			t.blocking.requests[c]++
			t.mu.Unlock()
			t.failPaused(e.RequestID)
			return
		}
	}
	t.continuePaused(e.RequestID)
}

// blockedRequests copies the job's counters.
func (t *tab) blockedRequests() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int, len(t.blocking.cats))
	for _, c := range t.blocking.cats {
		out[c] = t.blocking.requests[c]
	}
	return out
}

// filterChunk is how many selectors one style rule holds; a rule Chromium
// refuses is split in halves until only the selectors it cannot parse are
// left out.
const filterChunk = 500

// hideFilteredJS adds one style sheet per category (its argument: selectors
// by category) and answers the rules it holds by category.
const hideFilteredJS = `((groups) => {
	const out = {};
	for (const [cat, sels] of Object.entries(groups)) {
		const st = document.createElement("style");
		st.setAttribute("data-snapq-filter", cat);
		(document.head || document.documentElement).appendChild(st);
		const add = (list) => {
			if (!list.length) return;
			try { st.sheet.insertRule(list.join(",") + "{display:none !important}", st.sheet.cssRules.length); }
			catch (e) { if (list.length === 1) return; const h = list.length >> 1; add(list.slice(0, h)); add(list.slice(h)); }
		};
		for (let i = 0; i < sels.length; i += %d) add(sels.slice(i, i + %d));
		out[cat] = st.sheet ? st.sheet.cssRules.length : 0;
	}
	return out;
})(%s)`

// countHiddenJS counts, by category, the elements its style sheet hides.
const countHiddenJS = `(() => {
	const out = {};
	for (const st of document.querySelectorAll("style[data-snapq-filter]")) {
		const seen = new Set();
		for (const r of (st.sheet ? st.sheet.cssRules : [])) {
			try { for (const el of document.querySelectorAll(r.selectorText)) seen.add(el); } catch (e) {}
			if (seen.size > 100000) break;
		}
		out[st.getAttribute("data-snapq-filter")] = seen.size;
	}
	return out;
})()`

// hideFiltered puts the element-hiding rules of the job's categories in
// force on the page.
func (j *job) hideFiltered() {
	cats := j.req.Block.Categories()
	f := j.t.inst.cfg.Filter
	if len(cats) == 0 || f == nil {
		return
	}
	start := time.Now()
	st, _ := j.t.state()
	page := st.docURL
	if page == "" {
		page = st.frameURL
	}
	host := ""
	if u, err := url.Parse(page); err == nil {
		host = u.Hostname()
	}
	groups, _ := json.Marshal(f.Selectors(host, cats))
	var rules map[string]int
	err := evalJSON(j.t.page.Context(j.ctx), fmt.Sprintf(hideFilteredJS, filterChunk, filterChunk, groups), &rules)
	logStep(j.res, "block.hide", host, start, err, fmt.Sprintf("%v style rules", rules))
}

// recordFiltered counts what the filter lists blocked into the result.
func (j *job) recordFiltered(p *rod.Page) {
	if len(j.req.Block.Categories()) == 0 {
		return
	}
	b := &Blocking{Requests: j.t.blockedRequests(), Elements: map[string]int{}}
	for _, c := range j.req.Block.Categories() {
		b.Elements[c] = 0
	}
	var n map[string]int
	if err := evalJSON(p, countHiddenJS, &n); err == nil {
		for c, v := range n {
			if _, ok := b.Elements[c]; ok {
				b.Elements[c] = v
			}
		}
	}
	j.res.Blocking = b
}
