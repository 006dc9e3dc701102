package browserless

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/snapq/snapq/jobs"
)

// The mappings of the fields every route has.

func (p *parser) url(field string, raw json.RawMessage) {
	if s, ok := p.str(field, raw); ok {
		p.req.Target.URL = s
		p.from("url", field)
	}
}

func (p *parser) token(field string, raw json.RawMessage) {
	if s, ok := p.str(field, raw); ok {
		p.req.Token = s
	}
}

// gotoOptions: {waitUntil, timeout, referer}.
func (p *parser) gotoOptions(field string, raw json.RawMessage) {
	m := p.object(field, raw, with(keys("waitUntil", "timeout", "referer"),
		"referrerPolicy", "snapq sends the browser's own referrer policy", "signal", "not a JSON value"))
	if v, ok := m["waitUntil"]; ok {
		p.waitUntil(field+".waitUntil", v)
	}
	if v, ok := m["timeout"]; ok {
		p.gotoTimeout(field+".timeout", v)
	}
	if v, ok := m["referer"]; ok {
		if s, ok := p.str(field+".referer", v); ok && s != "" {
			p.header("Referer", s)
			p.from("options.emulate.headers", field+".referer")
		}
	}
}

// waitUntil: one lifecycle event or a list of them (all must have fired:
// the last of them in load order wins).
func (p *parser) waitUntil(field string, raw json.RawMessage) {
	var one string
	if strictUnmarshal(raw, &one) == nil {
		p.until(field, one)
		return
	}
	list, ok := p.strings(field, raw)
	if !ok || len(list) == 0 {
		if ok {
			p.errs.Add("invalid_field", field, "must name at least one event")
		}
		return
	}
	order := map[string]int{"domcontentloaded": 0, "load": 1, "networkidle": 2}
	last := ""
	for _, e := range list {
		u, known := lifecycle[strings.ToLower(e)]
		if !known {
			p.until(field, e) // records the error
			return
		}
		if last == "" || order[u] > order[lifecycle[last]] {
			last = e
		}
	}
	p.until(field, last)
}

// gotoTimeout: the navigation's budget in ms; 0 (no timeout in Browserless)
// keeps snapq's bounded default.
func (p *parser) gotoTimeout(field string, raw json.RawMessage) {
	if n, ok := p.number(field, raw); ok && n != 0 {
		p.o.TimeoutMS = &n
		p.from("options.timeout_ms", field)
	}
}

// waitForSelector: {selector, timeout, visible, hidden}. snapq waits for a
// visible element (hidden: for the selector to be hidden or gone).
func (p *parser) waitForSelector(field string, raw json.RawMessage) {
	m := p.object(field, raw, keys("selector", "timeout", "visible", "hidden"))
	if m == nil {
		return
	}
	raw, given := m["selector"]
	if !given {
		p.errs.Add("required", field+".selector", "selector is required")
		return
	}
	sel, ok := p.str(field+".selector", raw)
	if !ok || sel == "" {
		if ok {
			p.errs.Add("required", field+".selector", "selector is required")
		}
		return
	}
	hidden := false
	if v, ok := m["hidden"]; ok {
		hidden, _ = p.boolean(field+".hidden", v)
	}
	if v, ok := m["visible"]; ok {
		p.boolean(field+".visible", v)
	}
	if hidden {
		p.wait().HiddenSelector = &sel
		p.from("options.wait.hidden_selector", field+".selector")
	} else {
		p.wait().Selector = &sel
		p.from("options.wait.selector", field+".selector")
	}
	if v, ok := m["timeout"]; ok {
		if n, ok := p.number(field+".timeout", v); ok {
			p.wait().SelectorTimeoutMS = &n
			p.from("options.wait.selector_timeout_ms", field+".timeout")
		}
	}
}

func (p *parser) waitForTimeout(field string, raw json.RawMessage) {
	if n, ok := p.number(field, raw); ok {
		p.wait().DelayMS = &n
		p.from("options.wait.delay_ms", field)
	}
}

// waitForEvent: v2's {event, timeout} or the bare event name older clients
// send. snapq waits for page lifecycle events only.
func (p *parser) waitForEvent(field string, raw json.RawMessage) {
	var name string
	if strictUnmarshal(raw, &name) == nil {
		p.until(field, name)
		return
	}
	m := p.object(field, raw, keys("event", "timeout"))
	if m == nil {
		return
	}
	if v, given := m["event"]; !given {
		p.errs.Add("required", field+".event", "event is required")
	} else if s, ok := p.str(field+".event", v); ok {
		p.until(field+".event", s)
	}
	if v, ok := m["timeout"]; ok {
		p.number(field+".timeout", v) // the navigation's timeout bounds the wait
	}
}

func (p *parser) bestAttempt(field string, raw json.RawMessage) {
	if b, ok := p.boolean(field, raw); ok {
		p.wait().BestAttempt = &b
		p.from("options.wait.best_attempt", field)
	}
}

// rejectResourceTypes: the resource types snapq can block.
func (p *parser) rejectResourceTypes(field string, raw json.RawMessage) {
	list, ok := p.strings(field, raw)
	if !ok {
		return
	}
	blockable := map[string]bool{"image": true, "font": true, "media": true, "stylesheet": true}
	types := []string{}
	for i, t := range list {
		if !blockable[t] {
			p.errs.Add("unsupported_value", fmt.Sprintf("%s[%d]", field, i),
				fmt.Sprintf("snapq blocks image, font, media and stylesheet requests, not %q", t))
			continue
		}
		types = append(types, t)
	}
	p.o.Block.ResourceTypes = &types
	p.from("options.block.resource_types", field)
}

// rejectRequestPattern: Browserless takes regular expressions matched
// anywhere in the URL; snapq blocks by wildcard patterns. A pattern made of
// literal text and ".*" converts; any other regular expression is refused.
func (p *parser) rejectRequestPattern(field string, raw json.RawMessage) {
	list, ok := p.strings(field, raw)
	if !ok {
		return
	}
	globs := make([]string, 0, len(list))
	for i, re := range list {
		g, ok := regexToGlob(re)
		if !ok {
			p.errs.Add("unsupported_value", fmt.Sprintf("%s[%d]", field, i),
				"snapq converts patterns of literal text and .* only (a wildcard match); this one uses other regular-expression syntax")
			continue
		}
		globs = append(globs, g)
	}
	p.o.Block.URLPatterns = &globs
	p.from("options.block.url_patterns", field)
}

// regexSyntax are the characters that make a pattern more than literal
// text (a backslash escapes one of them, or ".").
var regexSyntax = regexp.MustCompile(`[\[\](){}?+|^$]`)

// regexToGlob converts an unanchored regular expression of literal text,
// escaped characters and ".*" into a '*' wildcard pattern.
func regexToGlob(re string) (string, bool) {
	var b strings.Builder
	b.WriteByte('*')
	for i := 0; i < len(re); i++ {
		switch c := re[i]; {
		case c == '\\' && i+1 < len(re) && strings.IndexByte(`.\/-*?+()[]{}|^$`, re[i+1]) >= 0 && re[i+1] != '*':
			b.WriteByte(re[i+1])
			i++
		case c == '.' && i+1 < len(re) && re[i+1] == '*':
			b.WriteByte('*')
			i++
		case c == '.' || c == '*' || c == '\\' || regexSyntax.MatchString(string(c)):
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('*')
	glob := b.String()
	for strings.Contains(glob, "**") {
		glob = strings.ReplaceAll(glob, "**", "*")
	}
	return glob, re != ""
}

func (p *parser) headers(field string, raw json.RawMessage) {
	var h map[string]string
	if !p.decode(field, raw, &h, "an object of header names and string values") {
		return
	}
	for _, k := range sortedStrings(h) {
		p.header(k, h[k])
	}
	p.from("options.emulate.headers", field)
}

func (p *parser) header(name, value string) {
	e := p.emulate()
	if e.Headers == nil {
		e.Headers = &map[string]string{}
	}
	(*e.Headers)[name] = value
}

// cookies: Puppeteer's CookieParam, the fields snapq sets.
func (p *parser) cookies(field string, raw json.RawMessage) {
	var list []json.RawMessage
	if !p.decode(field, raw, &list, "a list of cookies") {
		return
	}
	out := make([]jobs.CookieInput, 0, len(list))
	for i, c := range list {
		if ck, ok := p.cookie(fmt.Sprintf("%s[%d]", field, i), c); ok {
			out = append(out, ck)
		}
	}
	p.emulate().Cookies = &out
	p.from("options.emulate.cookies", field)
}

func (p *parser) cookie(field string, raw json.RawMessage) (jobs.CookieInput, bool) {
	const why = "snapq sets a cookie's name, value, url, domain, path, secure, httpOnly, sameSite and expires only"
	m := p.object(field, raw, with(keys("name", "value", "url", "domain", "path", "secure", "httpOnly", "sameSite", "expires"),
		"priority", why, "sameParty", why, "sourceScheme", why, "partitionKey", why))
	var c struct {
		Name, Value, URL, Domain, Path, SameSite string
		Secure, HTTPOnly                         bool
		Expires                                  float64
	}
	if m == nil || !p.decode(field, raw, &c, "a cookie") {
		return jobs.CookieInput{}, false
	}
	if c.SameSite == "Default" {
		c.SameSite = ""
	}
	return jobs.CookieInput{Name: c.Name, Value: c.Value, URL: c.URL, Domain: c.Domain, Path: c.Path,
		Secure: c.Secure, HTTPOnly: c.HTTPOnly, SameSite: c.SameSite, Expires: c.Expires}, true
}

// userAgent: v1's string or v2's {userAgent}.
func (p *parser) userAgent(field string, raw json.RawMessage) {
	var ua string
	if strictUnmarshal(raw, &ua) != nil {
		const why = "snapq sets the User-Agent string only"
		m := p.object(field, raw, with(keys("userAgent"), "userAgentMetadata", why, "platform", why))
		if m == nil {
			return
		}
		var ok bool
		if ua, ok = p.str(field+".userAgent", m["userAgent"]); !ok {
			return
		}
		field += ".userAgent"
	}
	p.emulate().UserAgent = &ua
	p.from("options.emulate.user_agent", field)
}

func (p *parser) emulateMediaType(field string, raw json.RawMessage) {
	if s, ok := p.str(field, raw); ok && s != "" {
		p.emulate().Media = &s
		p.from("options.emulate.media", field)
	}
}

// viewport: {width, height, deviceScaleFactor, isMobile, hasTouch}.
func (p *parser) viewport(field string, raw json.RawMessage) {
	if string(raw) == "null" {
		return
	}
	m := p.object(field, raw, with(keys("width", "height", "deviceScaleFactor", "isMobile", "hasTouch", "isLandscape")))
	if m == nil {
		return
	}
	v := &jobs.ViewportInput{}
	for name, dst := range map[string]**float64{"width": &v.Width, "height": &v.Height, "deviceScaleFactor": &v.DeviceScaleFactor} {
		if r, ok := m[name]; ok {
			if n, ok := p.number(field+"."+name, r); ok {
				*dst = &n
			}
		}
	}
	p.o.Viewport = v
	p.from("options.viewport", field)
	p.from("options.viewport.device_scale_factor", field+".deviceScaleFactor")
	for name, dst := range map[string]func(bool){"isMobile": func(b bool) { p.emulate().Mobile = &b }, "hasTouch": func(b bool) { p.emulate().Touch = &b }} {
		if r, ok := m[name]; ok {
			if b, ok := p.boolean(field+"."+name, r); ok {
				dst(b)
			}
		}
	}
	if r, ok := m["isLandscape"]; ok {
		if b, ok := p.boolean(field+".isLandscape", r); ok && b {
			p.errs.Add("unsupported_value", field+".isLandscape", "snapq does not emulate a landscape screen: swap width and height")
		}
	}
}

// addStyleTag: the content of each tag, injected as prepare.css (after the
// waits, before the outputs); tags by url or path are refused.
func (p *parser) addStyleTag(field string, raw json.RawMessage) {
	var list []json.RawMessage
	if !p.decode(field, raw, &list, "a list of style tags") {
		return
	}
	const why = "snapq injects inline CSS only (content)"
	var css []string
	for i, t := range list {
		f := fmt.Sprintf("%s[%d]", field, i)
		m := p.object(f, t, with(keys("content"), "url", why, "path", why))
		if m == nil {
			continue
		}
		if s, ok := p.str(f+".content", m["content"]); ok {
			css = append(css, s)
		}
	}
	joined := strings.Join(css, "\n")
	if p.o.Prepare == nil {
		p.o.Prepare = &jobs.PrepareInput{}
	}
	p.o.Prepare.CSS = &joined
	p.from("options.prepare.css", field)
}

// setJavaScriptEnabled: snapq always runs the page's scripts.
func (p *parser) javaScript(field string, raw json.RawMessage) {
	if b, ok := p.boolean(field, raw); ok && !b {
		p.errs.Add("refused_field", field, "snapq always runs the page's JavaScript")
	}
}

func sortedStrings(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}
